/**
 * The agent API under /v3, in one place: what `buildkite-agent` calls (register, connect,
 * heartbeat, ping for work, accept/start/finish a job, its log chunks, pipeline uploads). Its
 * credential (a registration token for `/register`, the agent's access token otherwise) is
 * resolved by `agentAuth`, which app.ts mounts before the body parsers and the validator, so a
 * request without a valid token is refused before its body is read. The rules are the agents'
 * and the builds' (src/builds/jobs/agent-work.ts).
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AgentService } from '../agents/service';
import { operationRouter } from '../http/contract/operation';
import { agentOf, registrationOf } from './locals';
import { setWarnings } from '../http/responses/warning';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { PipelineUploadService } from '../builds/jobs/pipeline-upload';
import type { StepService } from '../builds/jobs/steps';
import { BadRequestError, ValidationError } from '../core/errors';
import { fieldOf } from '../core/guards';
import { refuseDeclaredOversize } from '../http/middleware/body';
import { serializeAgentJob, type AgentJobLimits } from './serialize';

/** Where app.ts mounts `agentAuth`: the spec's paths of the agent API all begin with it. */
export const AGENT_API_PATH = '/v3';

/** Seconds between the agent's polls for work, its reads of a running job's state, and its heartbeats. */
export const PING_INTERVAL_SECONDS = 2;
export const JOB_STATUS_INTERVAL_SECONDS = 1;
export const HEARTBEAT_INTERVAL_SECONDS = 30;
/** Seconds an agent acquiring a job that is not runnable yet waits before it asks again (423). */
export const ACQUIRE_RETRY_AFTER_SECONDS = 5;
/**
 * The largest log chunk an agent is told to send: the real service's 100 KiB, or the body limit
 * if that is smaller (the limit counts the chunk's bytes after decompression).
 */
const CHUNK_SIZE_BYTES = 100 * 1024;

/**
 * The body of `POST /v3/jobs/{id}/chunks` as the real agent sends it: `text/plain`, usually
 * gzip-compressed, read as text. `limit` bounds the decompressed bytes (body-parser counts what
 * the decompression yields), so a small compressed body cannot expand without bound. A body
 * that is not valid gzip is a 400 of our own wording.
 */
export function agentChunkBodyParser(limit: number) {
  const text = express.text({ type: 'text/plain', limit, inflate: true, defaultCharset: 'utf-8' });
  return [
    refuseDeclaredOversize(limit),
    (req: Request, res: Response, next: NextFunction) =>
      text(req, res, (err?: unknown) => {
        const code = fieldOf(err, 'code');
        if (typeof code === 'string' && code.startsWith('Z_')) return next(new BadRequestError('The log chunk is not valid gzip data'));
        next(err);
      }),
  ];
}

export function agentAuth(service: AgentService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    // The caller's address: a cluster's token may allow only some (Express's `req.ip`, TRUST_PROXY aware).
    if (req.path === '/register') res.locals.registration = await service.authenticateRegistration(header, req.ip ?? null);
    else res.locals.agent = await service.authenticateAgent(header, req.ip ?? null);
    next();
  };
}

export interface AgentApiSettings {
  publicUrl: string;
  /** BODY_LIMIT_BYTES: a log chunk must fit in it. */
  bodyLimitBytes: number;
}

export function agentApiRoutes(service: AgentService, work: AgentWorkService, uploads: PipelineUploadService, steps: StepService, settings: AgentApiSettings) {
  const { publicUrl } = settings;
  const api = operationRouter();
  const endpoint = `${publicUrl.replace(/\/+$/, '')}${AGENT_API_PATH}`;
  const limits: AgentJobLimits = {
    endpoint,
    chunksMaxSizeBytes: Math.min(CHUNK_SIZE_BYTES, settings.bodyLimitBytes),
    logMaxSizeBytes: work.jobLogLimitBytes,
  };

  api.on('registerAgent', async (req, res) => {
    const reg = registrationOf(res);
    const { agent, accessToken } = await service.register(reg, req.body, { ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null });
    res.status(201).json({
      id: agent.id,
      name: agent.name,
      access_token: accessToken,
      meta_data: agent.metaData,
      endpoint,
      ping_interval: PING_INTERVAL_SECONDS,
      job_status_interval: JOB_STATUS_INTERVAL_SECONDS,
      heartbeat_interval: HEARTBEAT_INTERVAL_SECONDS,
    });
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
    res.json({ action, job: job ? serializeAgentJob(job, agent, publicUrl, limits) : null });
  });

  api.on('getAgentJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.job(agent, req.params.job_id), agent, publicUrl, limits));
  });

  api.on('acceptJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.accept(agent, req.params.job_id), agent, publicUrl, limits));
  });

  api.on('acquireJob', async (req, res) => {
    const agent = agentOf(res);
    const acquired = await work.acquire(agent, req.params.job_id);
    if ('locked' in acquired) {
      // Not runnable yet: the agent backs off as Retry-After says and asks again.
      res.status(423).set('Retry-After', String(ACQUIRE_RETRY_AFTER_SECONDS)).json({ message: acquired.locked });
      return;
    }
    res.json(serializeAgentJob(acquired.job, agent, publicUrl, limits));
  });

  api.on('startJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.start(agent, req.params.job_id), agent, publicUrl, limits));
  });

  api.on('appendJobLogChunk', async (req, res) => {
    let chunk = req.body;
    if (typeof chunk === 'string') {
      // The real agent's form: the bytes as the body, the numbers in the query string.
      const { sequence, offset } = req.query;
      const missing = [...(sequence === undefined ? ['sequence'] : []), ...(offset === undefined ? ['offset'] : [])];
      if (missing.length) throw new ValidationError(missing.map((field) => ({ field, code: 'missing_field' })));
      chunk = { sequence: sequence!, offset: offset!, content: chunk };
    }
    await work.appendChunk(agentOf(res), req.params.job_id, chunk);
    res.status(201).json({ sequence: chunk.sequence });
  });

  api.on('saveJobHeaderTimes', async (req, res) => {
    await work.saveHeaderTimes(agentOf(res), req.params.job_id, req.body.header_times);
    res.status(204).end();
  });

  api.on('exportStep', async (req, res) => {
    res.json({ output: await steps.export(agentOf(res), req.params.step_id_or_key, req.body) });
  });

  api.on('updateAgentJob', async (req, res) => {
    res.json({ id: await work.updateJob(agentOf(res), req.params.job_id, req.body) });
  });

  api.on('promiseJobFailure', async (req, res) => {
    await work.promiseFailure(agentOf(res), req.params.job_id, req.body.exit_status, req.body.reason ?? null);
    res.status(204).end();
  });

  api.on('cancelStep', async (req, res) => {
    res.json({ uuid: await steps.cancel(agentOf(res), req.params.step_id_or_key, req.body ?? { force: false }) });
  });

  api.on('cancelBuildFromAgent', async (req, res) => {
    res.json({ uuid: await steps.cancelBuild(agentOf(res), req.params.build_id) });
  });

  api.on('updateStep', async (req, res) => {
    await steps.update(agentOf(res), req.params.step_id_or_key, req.body);
    res.status(204).end();
  });

  api.on('finishJob', async (req, res) => {
    const agent = agentOf(res);
    res.json(serializeAgentJob(await work.finish(agent, req.params.job_id, req.body), agent, publicUrl, limits));
  });

  api.on('uploadPipeline', async (req, res) => {
    const { pipeline, uuid, replace } = req.body;
    const { jobs, notices } = await uploads.upload(agentOf(res), req.params.job_id, pipeline, uuid ?? null, replace === true);
    setWarnings(res, notices);
    res.status(201).json({ jobs: jobs.map((j) => ({ id: j.id, type: j.type, state: j.state, step_key: j.stepKey })) });
  });

  return api.router;
}
