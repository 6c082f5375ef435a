/**
 * The agents' REST operations (registration tokens, list, get) and the agent API under /v3
 * that agents call. The agent API's credential is resolved by `agentAuth`, which app.ts mounts
 * before the body parsers and the validator, so a request without a valid token is refused
 * before its body is read.
 */
import express, { NextFunction, Request, Response } from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { pageRequest, setLinkHeader } from '../http/pagination';
import type { Agent } from './repository';
import { serializeAgent, serializeAgentJob, serializeAgentToken } from './serialize';
import type { AgentService, Registration } from './service';

export const AGENT_API_PATH = '/v3';

export function agentAuth(service: AgentService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (req.path === '/register') res.locals.registration = await service.authenticateRegistration(header);
    else res.locals.agent = await service.authenticateAgent(header);
    next();
  };
}

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

  const agentOf = (res: Response) => res.locals.agent as Agent;
  const api = AGENT_API_PATH;

  router.post(`${api}/register`, async (req, res) => {
    const reg = res.locals.registration as Registration;
    const body = req.body as operations['registerAgent']['requestBody']['content']['application/json'];
    const { agent, accessToken } = await service.register(reg, body, { ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null });
    res.status(201).json({ id: agent.id, name: agent.name, access_token: accessToken, meta_data: agent.metaData });
  });

  router.post(`${api}/connect`, async (_req, res) => {
    const agent = await service.connect(agentOf(res));
    res.json({ id: agent.id, connection_state: agent.connectionState });
  });

  router.post(`${api}/disconnect`, async (_req, res) => {
    const agent = await service.disconnect(agentOf(res));
    res.json({ id: agent.id, connection_state: agent.connectionState });
  });

  router.post(`${api}/heartbeat`, async (_req, res) => {
    res.json({ received_at: (await service.heartbeat(agentOf(res))).toISOString() });
  });

  router.get(`${api}/ping`, async (_req, res) => {
    const agent = agentOf(res);
    const { action, job } = await service.ping(agent);
    res.json({ action, job: job ? serializeAgentJob(job, agent, publicUrl) : null });
  });

  router.get(`${api}/jobs/:job_id`, async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await service.job(agent, String(req.params.job_id)), agent, publicUrl));
  });

  router.put(`${api}/jobs/:job_id/accept`, async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await service.accept(agent, String(req.params.job_id)), agent, publicUrl));
  });

  router.put(`${api}/jobs/:job_id/start`, async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await service.start(agent, String(req.params.job_id)), agent, publicUrl));
  });

  router.post(`${api}/jobs/:job_id/chunks`, async (req, res) => {
    const body = req.body as operations['appendJobLogChunk']['requestBody']['content']['application/json'];
    await service.appendChunk(agentOf(res), String(req.params.job_id), body);
    res.status(201).json({ sequence: body.sequence });
  });

  router.put(`${api}/jobs/:job_id/finish`, async (req, res) => {
    const agent = agentOf(res);
    const body = req.body as operations['finishJob']['requestBody']['content']['application/json'];
    res.json(serializeAgentJob(await service.finish(agent, String(req.params.job_id), body), agent, publicUrl));
  });

  return router;
}
