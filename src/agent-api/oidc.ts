/**
 * `buildkite-agent oidc request-token` on the agent API, and the discovery documents of the
 * issuer of its tokens (`/.well-known/openid-configuration`, `/.well-known/jwks`), which anyone
 * may read. The claims are the builds area's (src/builds/jobs/oidc-tokens.ts), the keys the
 * security area's (src/security/oidc.ts).
 */
import type { OidcTokenService } from '../builds/jobs/oidc-tokens';
import { operationRouter } from '../http/contract/operation';
import type { OidcIssuer } from '../security/oidc';
import { agentOf } from './locals';

export function oidcRoutes(tokens: OidcTokenService, issuer: OidcIssuer) {
  const api = operationRouter();

  api.on('requestOidcToken', async (req, res) => {
    res.json({ token: await tokens.request(agentOf(res), req.params.job_id, req.body ?? {}) });
  });

  api.on('getOpenIdConfiguration', (_req, res) => {
    res.json(issuer.discovery());
  });

  api.on('getOidcJwks', (_req, res) => {
    res.json(issuer.jwks());
  });

  return api.router;
}
