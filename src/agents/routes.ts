/** The agents' REST operations: registration tokens, list, get. The agent API is src/agent-api/. */
import { actorOf } from '../http/auth';
import { operationRouter } from '../http/operation';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeAgent, serializeAgentToken } from './serialize';
import type { AgentService } from './service';

export function agentRoutes(service: AgentService, publicUrl: string) {
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
    res.json(items.slice(0, page.perPage).map((i) => serializeAgent(i.agent, i.job, publicUrl, actor.organization.slug)));
  });

  api.on('getAgent', async (req, res) => {
    const actor = actorOf(res);
    const { agent, job } = await service.get(actor, req.params.agent_id);
    res.json(serializeAgent(agent, job, publicUrl, actor.organization.slug));
  });

  return api.router;
}
