/** The agents' REST operations: registration tokens, list, get, pause, resume, stop. The agent API is src/agent-api/. */
import type { components } from '../../generated/api';
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializeAgent, serializeAgentToken } from './serialize';
import type { Agent } from './repository';
import type { AgentService } from './service';

/**
 * The jobs these agents hold, by job id, as JSON: the builds area knows jobs (and embeds agents
 * in them), so app.ts hands its answer in rather than this area reaching up for it.
 */
export type HeldJobs = (agents: Agent[]) => Promise<Map<string, components['schemas']['Job']>>;

export function agentRoutes(service: AgentService, heldJobs: HeldJobs, publicUrl: string) {
  const api = operationRouter();

  api.on('createAgentToken', async (req, res) => {
    const actor = actorOf(res);
    const { record, token } = await service.createTokenAs(actor, req.body.description);
    res.status(201).json(serializeAgentToken(record, token));
  });

  api.on('listAgents', async (req, res) => {
    const actor = actorOf(res);
    const q = req.query;
    // As the real API's list: connected and stopping agents only (GET .../agents/{id} finds any).
    const filter = { name: q.name, hostname: q.hostname, version: q.version, clusterQueueId: q.cluster_queue_id, live: true };
    const agents = await uncountedPage(req, res, publicUrl, (offset, limit) => service.list(actor, filter, offset, limit));
    const jobs = await heldJobs(agents);
    res.json(agents.map((agent) => serializeAgent(agent, (agent.jobId && jobs.get(agent.jobId)) || null, publicUrl, actor.organization.slug)));
  });

  api.on('getAgent', async (req, res) => {
    const actor = actorOf(res);
    const agent = await service.get(actor, req.params.agent_id);
    const jobs = await heldJobs([agent]);
    res.json(serializeAgent(agent, (agent.jobId && jobs.get(agent.jobId)) || null, publicUrl, actor.organization.slug));
  });

  api.on('pauseAgent', async (req, res) => {
    await service.pause(actorOf(res), req.params.agent_id, req.body ?? {});
    res.status(204).end();
  });

  api.on('resumeAgent', async (req, res) => {
    await service.resume(actorOf(res), req.params.agent_id);
    res.status(204).end();
  });

  api.on('stopAgent', async (req, res) => {
    await service.stop(actorOf(res), req.params.agent_id, req.body?.force ?? true);
    res.status(204).end();
  });

  return api.router;
}
