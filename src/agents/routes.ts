/** The agents' REST operations: registration tokens, list, get. The agent API is src/agent-api/. */
import express from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeAgent, serializeAgentToken } from './serialize';
import type { AgentService } from './service';

export function agentRoutes(service: AgentService, publicUrl: string) {
  const router = express.Router();
  const org = '/v2/organizations/:org_slug';

  router.post(`${org}/agent-tokens`, async (req, res) => {
    const actor = actorOf(res);
    const body = req.body as operations['createAgentToken']['requestBody']['content']['application/json'];
    const { record, token } = await service.createTokenAs(actor, body.description);
    res.status(201).json(serializeAgentToken(record, token));
  });

  router.get(`${org}/agents`, async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const q = req.query as operations['listAgents']['parameters']['query'] & object;
    const items = await service.list(actor, { name: q.name, hostname: q.hostname, version: q.version }, page.offset, page.perPage + 1);
    setLinkHeader(req, res, publicUrl, page, { hasNext: items.length > page.perPage });
    res.json(items.slice(0, page.perPage).map((i) => serializeAgent(i.agent, i.job, publicUrl, actor.organization.slug)));
  });

  router.get(`${org}/agents/:agent_id`, async (req, res) => {
    const actor = actorOf(res);
    const { agent, job } = await service.get(actor, String(req.params.agent_id));
    res.json(serializeAgent(agent, job, publicUrl, actor.organization.slug));
  });

  return router;
}
