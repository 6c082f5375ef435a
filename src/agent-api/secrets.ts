/**
 * `buildkite-agent secret get KEY` on the agent API (`GET /v3/jobs/{job_id}/secrets?key=KEY`,
 * the agent's GetSecret): the agent running the job reads a secret of its pipeline's cluster,
 * as the secret's policy allows. The rules are the clusters' (src/clusters/service.ts); the job
 * must be one the agent is running (src/builds/jobs/agent-work.ts).
 */
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { ClusterService } from '../clusters/service';
import { operationRouter } from '../http/contract/operation';
import { agentOf } from './locals';

export function agentSecretRoutes(clusters: ClusterService, work: AgentWorkService) {
  const api = operationRouter();

  api.on('getJobSecret', async (req, res) => {
    const job = await work.activeJob(agentOf(res), req.params.job_id);
    const secret = await clusters.secretForJob(job.job.id, req.query.key);
    // The value is in this answer only: nothing logs answer bodies.
    res.json({ name: secret.key, key: secret.key, value: secret.value, uuid: secret.id });
  });

  return api.router;
}
