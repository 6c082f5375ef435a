/**
 * `buildkite-agent artifact upload | download | shasum` on the agent API: a batch of artifact
 * records for a job the agent runs (answered with where to upload each one's content), their
 * states once uploaded, and the search a download or shasum starts from. The rules are the
 * artifacts area's (src/artifacts/service.ts).
 */
import type { Request } from 'express';
import { serializeFoundArtifact } from '../artifacts/serialize';
import { SEARCH_URL_SECONDS, type ArtifactService } from '../artifacts/service';
import { operationRouter } from '../http/contract/operation';
import { agentOf } from './locals';

export function agentArtifactRoutes(service: ArtifactService, publicUrl: string) {
  const api = operationRouter();
  /**
   * The agent's own URLs (upload form, content) are on the address it reached the agent API at,
   * which it can reach, rather than PUBLIC_URL, which an agent on an inner network may not.
   */
  const agentBase = (req: Pick<Request, 'protocol' | 'get'>) => `${req.protocol}://${req.get('host') ?? new URL(publicUrl).host}`;

  api.on('createArtifacts', async (req, res) => {
    const batch = await service.create(agentOf(res), req.params.job_id, req.body, agentBase(req));
    res
      .status(201)
      .json({ id: batch.id, artifact_ids: batch.artifactIds, upload_instructions: batch.instructions, per_artifact_instructions: batch.perArtifact });
  });

  api.on('updateArtifacts', async (req, res) => {
    const artifacts = await service.updateStates(agentOf(res), req.params.job_id, req.body.artifacts);
    res.json({ artifacts: artifacts.map((a) => ({ id: a.id, state: a.state })) });
  });

  api.on('searchArtifacts', async (req, res) => {
    const q = req.query;
    const found = await service.search(agentOf(res), req.params.build_id, {
      query: q.query,
      scope: q.scope,
      state: q.state,
      includeRetried: q.include_retried_jobs,
      includeDuplicates: q.include_duplicates,
    });
    res.json(await Promise.all(found.map(async (a) => serializeFoundArtifact(a, await service.contentUrl(agentBase(req), a, SEARCH_URL_SECONDS)))));
  });

  return api.router;
}
