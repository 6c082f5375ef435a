/**
 * The agent API under /v3, in one place: what `buildkite-agent` calls (register, connect,
 * heartbeat, ping for work, accept/start/finish a job, its log chunks, pipeline uploads). Its
 * credential (a registration token for `/register`, the agent's access token otherwise) is
 * resolved by `agentAuth`, which app.ts mounts before the body parsers and the validator, so a
 * request without a valid token is refused before its body is read. The rules are the agents'
 * and the jobs' services'.
 */
import express, { NextFunction, Request, Response } from 'express';
import type { components, operations } from '../../generated/api';
import type { Agent } from '../agents/repository';
import { serializeAgentJob } from '../agents/serialize';
import type { AgentService, Registration } from '../agents/service';
import { setWarnings } from '../http/warning';
import type { PipelineUploadService } from '../jobs/pipeline-upload';

export const AGENT_API_PATH = '/v3';

type JobState = components['schemas']['JobState'];

export function agentAuth(service: AgentService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (req.path === '/register') res.locals.registration = await service.authenticateRegistration(header);
    else res.locals.agent = await service.authenticateAgent(header);
    next();
  };
}

export function agentApiRoutes(service: AgentService, uploads: PipelineUploadService, publicUrl: string) {
  const router = express.Router();
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

  router.post(`${api}/jobs/:job_id/pipelines`, async (req, res) => {
    const body = req.body as operations['uploadPipeline']['requestBody']['content']['application/json'];
    const { jobs, notices } = await uploads.upload(agentOf(res), String(req.params.job_id), body.pipeline, body.uuid ?? null);
    setWarnings(res, notices);
    res.status(201).json({ jobs: jobs.map((j) => ({ id: j.id, type: j.type, state: j.state as JobState, step_key: j.stepKey })) });
  });

  return router;
}
