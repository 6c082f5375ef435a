/** The organizations a token reaches: list and get; an organization's rate limit status, API settings, and turning teams on. */
import { UnavailableError } from '../core/errors';
import { actorOf, orgOf, principalOf } from '../http/middleware/auth';
import { operationRouter, type OperationHandler } from '../http/contract/operation';
import { countedPage } from '../http/responses/pagination';
import { rateLimitUsageOf, WINDOW_SECONDS, windowAt } from '../http/middleware/rate-limit';
import { serializeApiSettings, serializeOrganization, serializePipelineSettings } from './serialize';
import type { PipelineSettings } from './repository';
import type { OrganizationService } from './service';

/** `rateLimitPerMinute`: the organizations' REST budget (RATE_LIMIT_PER_MINUTE; 0: none). */
export function organizationRoutes(organizations: OrganizationService, publicUrl: string, rateLimitPerMinute = 0) {
  const api = operationRouter();

  api.on('listOrganizations', async (req, res) => {
    const items = await countedPage(req, res, publicUrl, (offset, limit) => organizations.list(principalOf(res), offset, limit));
    res.json(items.map((o) => serializeOrganization(o, publicUrl)));
  });

  api.on('getOrganization', (_req, res) => {
    res.json(serializeOrganization(orgOf(res).organization, publicUrl));
  });

  // The counts this very request was given by the rate limiter (src/http/middleware/rate-limit.ts): the same
  // numbers as its RateLimit-* headers, this request included. No GraphQL API: its scope is never enforced.
  const rateLimitStatus: OperationHandler<'getOrganizationRateLimit'> = (_req, res) => {
    orgOf(res);
    const usage = rateLimitUsageOf(res);
    // Counted nowhere: with a budget set, the counters were unreachable.
    if (!usage && rateLimitPerMinute > 0) throw new UnavailableError();
    const nowMs = Date.now();
    const rest = usage
      ? { limit: usage.limit, current: usage.count, reset: usage.resetSeconds, reset_at: new Date(usage.resetAtMs).toISOString(), enforced: true }
      : unenforced(nowMs, WINDOW_SECONDS);
    res.json({ scopes: { rest, graphql: unenforced(nowMs, GRAPHQL_WINDOW_SECONDS) } });
  };
  api.on('getOrganizationRateLimit', rateLimitStatus);
  // The same operation under the docs' and the Go client's spelling, `rate_limit`.
  api.on('getOrganizationRateLimitStatus', (req, res) => rateLimitStatus(req, res));

  api.on('getApiSettings', async (_req, res) => {
    const actor = actorOf(res);
    res.json(serializeApiSettings(await organizations.apiSettings(actor), actor.organization, publicUrl));
  });
  api.on('updateApiSettings', async (req, res) => {
    const actor = actorOf(res);
    const { allowed_ip_addresses, revoke_inactive_tokens_after_days, restrict_user_api_token_creation } = req.body;
    const settings = await organizations.updateApiSettings(actor, {
      allowed_ip_addresses,
      revoke_inactive_tokens_after_days,
      restrict_user_api_token_creation,
    });
    res.json(serializeApiSettings(settings, actor.organization, publicUrl));
  });

  const settings = (res: Parameters<OperationHandler<'getPipelineSettings'>>[1], s: PipelineSettings) =>
    res.json(serializePipelineSettings(s, orgOf(res).organization, publicUrl));
  api.on('getPipelineSettings', async (_req, res) => settings(res, await organizations.pipelineSettings(actorOf(res))));
  api.on('updatePipelineSettings', async (req, res) => {
    const { default_branch, default_cluster_id, default_timeout_in_minutes, maximum_timeout_in_minutes, scheduled_job_expiry_in_minutes } = req.body;
    const input = { default_branch, default_cluster_id, default_timeout_in_minutes, maximum_timeout_in_minutes, scheduled_job_expiry_in_minutes };
    settings(res, await organizations.updatePipelineSettings(actorOf(res), input));
  });
  api.on('enableHostedAgentsTerminalAccess', async (_req, res) =>
    settings(res, await organizations.setPipelineSettingSwitch(actorOf(res), 'hosted_agents_ssh', true)),
  );
  api.on('disableHostedAgentsTerminalAccess', async (_req, res) =>
    settings(res, await organizations.setPipelineSettingSwitch(actorOf(res), 'hosted_agents_ssh', false)),
  );
  api.on('enablePublicPipelineCreation', async (_req, res) =>
    settings(res, await organizations.setPipelineSettingSwitch(actorOf(res), 'public_pipelines', true)),
  );
  api.on('disablePublicPipelineCreation', async (_req, res) =>
    settings(res, await organizations.setPipelineSettingSwitch(actorOf(res), 'public_pipelines', false)),
  );
  api.on('enableAdvancedQueueMetrics', async (_req, res) =>
    settings(res, await organizations.setPipelineSettingSwitch(actorOf(res), 'advanced_queue_metrics', true)),
  );
  api.on('configureBuildExport', (_req, res) => organizations.buildExportUnavailable(actorOf(res)));
  api.on('disableBuildExport', (_req, res) => organizations.buildExportUnavailable(actorOf(res)));

  api.on('enableTeams', async (_req, res) => {
    await organizations.enableTeams(actorOf(res));
    res.status(204).end();
  });

  return api.router;
}

/** The GraphQL rate limit's window (organizations/rate_limits.md: five minutes). */
const GRAPHQL_WINDOW_SECONDS = 300;

/** A scope no limit applies to: nothing counted, its window's end. */
function unenforced(nowMs: number, windowSeconds: number) {
  const { resetSeconds, resetAtMs } = windowAt(nowMs, windowSeconds);
  return { limit: 0, current: 0, reset: resetSeconds, reset_at: new Date(resetAtMs).toISOString(), enforced: false };
}
