/** The agents' REST operations: registration tokens, list, get. The agent API is src/agent-api/. */
import { actorOf } from '../http/auth';
import { operationRouter } from '../http/operation';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeAgent, serializeAgentToken } from './serialize';
import type { AgentWorkService } from '../jobs/agent-work';
import type { AgentService } from './service';

export function agentRoutes(service: AgentService, work: AgentWorkService, publicUrl: string) {
  const api = operationRouter();

  api.on('createAgentToken', async (req, res) => {
    const actor = actorOf(res);
    const { record, token } = await service.createTokenAs(actor, req.body.description);
    res.status(201).json(serializeAgentToken(record, token));
  });

  api.on('listAgents', async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const q = req.query;
    const items = await service.list(actor, { name: q.name, hostname: q.hostname, version: q.version }, page.offset, page.perPage + 1);
    setLinkHeader(req, res, publicUrl, page, { hasNext: items.length > page.perPage });
    const agents = items.slice(0, page.perPage);
    const jobs = await work.heldJobs(agents);
    res.json(agents.map((agent) => serializeAgent(agent, (agent.jobId && jobs.get(agent.jobId)) || null, publicUrl, actor.organization.slug)));
  });

  api.on('getAgent', async (req, res) => {
    const actor = actorOf(res);
    const agent = await service.get(actor, req.params.agent_id);
    const jobs = await work.heldJobs([agent]);
    res.json(serializeAgent(agent, (agent.jobId && jobs.get(agent.jobId)) || null, publicUrl, actor.organization.slug));
  });

  return api.router;
}
