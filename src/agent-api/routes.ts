/**
 * The agent API under /v3, in one place: what `buildkite-agent` calls (register, connect,
 * heartbeat, ping for work, accept/start/finish a job, its log chunks, pipeline uploads). Its
 * credential (a registration token for `/register`, the agent's access token otherwise) is
 * resolved by `agentAuth`, which app.ts mounts before the body parsers and the validator, so a
 * request without a valid token is refused before its body is read. The rules are the agents'
 * and the builds' (src/builds/jobs/agent-work.ts).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Agent } from '../agents/repository';
import type { AgentService, Registration } from '../agents/service';
import { operationRouter } from '../http/operation';
import { setWarnings } from '../http/warning';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { PipelineUploadService } from '../builds/jobs/pipeline-upload';
import { serializeAgentJob } from './serialize';

/** Where app.ts mounts `agentAuth`: the spec's paths of the agent API all begin with it. */
export const AGENT_API_PATH = '/v3';

export function agentAuth(service: AgentService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    // The caller's address: a cluster's token may allow only some (Express's `req.ip`, TRUST_PROXY aware).
    if (req.path === '/register') res.locals.registration = await service.authenticateRegistration(header, req.ip ?? null);
    else res.locals.agent = await service.authenticateAgent(header);
    next();
  };
}

export function agentApiRoutes(service: AgentService, work: AgentWorkService, uploads: PipelineUploadService, publicUrl: string) {
  const api = operationRouter();
  const agentOf = (res: Response) => res.locals.agent as Agent;

  api.on('registerAgent', async (req, res) => {
    const reg = res.locals.registration as Registration;
    const { agent, accessToken } = await service.register(reg, req.body, { ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null });
    res.status(201).json({ id: agent.id, name: agent.name, access_token: accessToken, meta_data: agent.metaData });
  });

  api.on('connectAgent', async (_req, res) => {
    const agent = await service.connect(agentOf(res));
    res.json({ id: agent.id, connection_state: agent.connectionState });
  });

  api.on('disconnectAgent', async (_req, res) => {
    const agent = await work.disconnect(agentOf(res));
    res.json({ id: agent.id, connection_state: agent.connectionState });
  });

  api.on('pauseSelf', async (req, res) => {
    await service.pauseSelf(agentOf(res), req.body ?? {});
    res.status(204).end();
  });

  api.on('resumeSelf', async (_req, res) => {
    await service.resumeSelf(agentOf(res));
    res.status(204).end();
  });

  api.on('stopSelf', async (req, res) => {
    await service.stopSelf(agentOf(res), req.body?.force ?? false);
    res.status(204).end();
  });

  api.on('agentHeartbeat', async (_req, res) => {
    res.json({ received_at: (await service.heartbeat(agentOf(res))).toISOString() });
  });

  api.on('pingAgent', async (_req, res) => {
    const agent = agentOf(res);
    const { action, job } = await work.ping(agent);
    res.json({ action, job: job ? serializeAgentJob(job, agent, publicUrl) : null });
  });

  api.on('getAgentJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.job(agent, req.params.job_id), agent, publicUrl));
  });

  api.on('acceptJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.accept(agent, req.params.job_id), agent, publicUrl));
  });

  api.on('startJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.start(agent, req.params.job_id), agent, publicUrl));
  });

  api.on('appendJobLogChunk', async (req, res) => {
    await work.appendChunk(agentOf(res), req.params.job_id, req.body);
    res.status(201).json({ sequence: req.body.sequence });
  });

  api.on('finishJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.finish(agent, req.params.job_id, req.body), agent, publicUrl));
  });

  api.on('uploadPipeline', async (req, res) => {
    const { pipeline, uuid } = req.body;
    const { jobs, notices } = await uploads.upload(agentOf(res), req.params.job_id, pipeline, uuid ?? null);
    setWarnings(res, notices);
    res.status(201).json({ jobs: jobs.map((j) => ({ id: j.id, type: j.type, state: j.state, step_key: j.stepKey })) });
  });

  return api.router;
}
