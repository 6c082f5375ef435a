/**
 * The job endpoints: thin handlers. Each operation on one job is bound twice where the API has
 * it twice, under its build (`.../builds/{number}/jobs/{id}/...`) and by its id alone within the
 * organization (`/organizations/{org}/jobs/{id}/...`): one handler, two bindings.
 */
import type { Response } from 'express';
import type { Agent } from '../../agents/repository';
import { serializeAgentBase } from '../../agents/serialize';
import { BadRequestError } from '../../core/errors';
import { actorOf } from '../../http/middleware/auth';
import { operationRouter, type OperationRequest } from '../../http/contract/operation';
import { cursorLinks } from '../../http/responses/pagination';
import { buildUrls, serializeJob } from '../serialize';
import type { BuildWithJobs } from '../service';
import type { Job } from './model';
import { sendLogHead, sendLogHtml, sendLogJson, sendLogTail, sendLogText, suffixRange } from './log-output';
import { sendEnvText } from './env-text';
import { jobEnv, serializeStepUpload, serializeStepUploadDetail } from './serialize';
import type { PipelineUploadService } from './pipeline-upload';
import type { JobService, JobTarget } from './service';

/** The operations on one job of a build: they share its path parameters. */
type BuildJobOperation =
  'getJob' | 'unblockJob' | 'retryJob' | 'reprioritizeJob' | 'getJobLog' | 'getJobLogText' | 'getJobLogHtml' | 'deleteJobLog' | 'getJobEnv' | 'getJobEnvText';

/** The same operations on a job named by its id alone. */
type OrganizationJobOperation =
  | 'getOrganizationJob'
  | 'unblockOrganizationJob'
  | 'retryOrganizationJob'
  | 'reprioritizeOrganizationJob'
  | 'getOrganizationJobLog'
  | 'getOrganizationJobLogText'
  | 'getOrganizationJobLogHtml'
  | 'deleteOrganizationJobLog'
  | 'getOrganizationJobEnv'
  | 'getOrganizationJobEnvText';

/** The job a request's path names. */
function targetOf(req: OperationRequest<BuildJobOperation> | OperationRequest<OrganizationJobOperation>): JobTarget {
  const p = req.params;
  return 'pipeline_slug' in p ? { pipelineSlug: p.pipeline_slug, number: p.build_number, jobId: p.job_id } : { jobId: p.job_id };
}

export function jobRoutes(jobs: JobService, publicUrl: string) {
  const api = operationRouter();
  /** One handler bound to the build-scoped operation and its organization-scoped twin. */
  const both = <A extends BuildJobOperation, B extends OrganizationJobOperation>(
    a: A,
    b: B,
    handler: (req: OperationRequest<A> | OperationRequest<B>, res: Response) => Promise<void>,
  ) => {
    api.on(a, handler);
    api.on(b, handler);
  };

  const jobJson = (item: BuildWithJobs, job: Job, agents: Agent[] = []) => {
    const { url, webUrl } = buildUrls(publicUrl, item.actor.organization.slug, item.pipeline.slug, item.build.number);
    const agent = job.agentId ? agents.find((a) => a.id === job.agentId) : undefined;
    return serializeJob(job, url, webUrl, agent ? serializeAgentBase(agent, publicUrl, item.actor.organization.slug) : null);
  };
  const changed = ({ item, jobId }: { item: BuildWithJobs; jobId: string }) =>
    jobJson(
      item,
      item.jobs.find((j) => j.id === jobId)!,
    );
  /** The log's URL under its build, whichever route named the job. */
  const logUrl = (item: BuildWithJobs, jobId: string) =>
    `${buildUrls(publicUrl, item.actor.organization.slug, item.pipeline.slug, item.build.number).url}/jobs/${jobId}/log`;

  api.on('listJobs', async (req, res) => {
    const perPage = req.query.per_page ?? 30;
    const state = req.query.state;
    const {
      item,
      jobs: page,
      next,
      agents,
    } = await jobs.list(actorOf(res), req.params.pipeline_slug, req.params.build_number, {
      states: state === undefined ? undefined : Array.isArray(state) ? state : [state],
      includeRetried: req.query.include_retried_jobs !== false,
      stepKey: req.query.step_key,
      groupKey: req.query.group_key,
      after: req.query.after,
      before: req.query.before,
      limit: perPage,
    });
    res.json({ items: page.map((j) => jobJson(item, j, agents)), links: cursorLinks(req, publicUrl, next, perPage) });
  });

  both('getJob', 'getOrganizationJob', async (req, res) => {
    const { item, job, agents } = await jobs.get(actorOf(res), targetOf(req));
    res.json(jobJson(item, job, agents));
  });

  both('unblockJob', 'unblockOrganizationJob', async (req, res) => {
    res.json(changed(await jobs.unblock(actorOf(res), targetOf(req), req.body ?? {})));
  });

  both('retryJob', 'retryOrganizationJob', async (req, res) => {
    res.json(changed(await jobs.retry(actorOf(res), targetOf(req))));
  });

  both('reprioritizeJob', 'reprioritizeOrganizationJob', async (req, res) => {
    res.json(changed(await jobs.reprioritize(actorOf(res), targetOf(req), req.body.priority)));
  });

  // Streamed from the store (./log-output): a log can be as large as JOB_LOG_LIMIT_BYTES.
  // `Range: bytes=-N`: the tail (the docs allow it with text only). HEAD: the size alone.
  both('getJobLog', 'getOrganizationJobLog', async (req, res) => {
    const actor = actorOf(res);
    const target = targetOf(req);
    const format = req.accepts(['application/json', 'text/plain', 'text/html']) || 'application/json';
    if (req.method === 'HEAD') return sendLogHead(res, format, await jobs.logSize(actor, target));
    const range = req.get('range');
    const tail = range !== undefined ? suffixRange(range, format === 'text/plain') : undefined;
    if (tail && 'refused' in tail) throw new BadRequestError(tail.refused);
    const { item, job, pages } = await jobs.log(actor, target);
    if (tail) await sendLogTail(res, pages, tail.bytes);
    else if (format === 'text/plain') await sendLogText(res, pages);
    else if (format === 'text/html') await sendLogHtml(res, pages);
    else await sendLogJson(res, logUrl(item, job.id), pages);
  });

  both('getJobLogText', 'getOrganizationJobLogText', async (req, res) => {
    const actor = actorOf(res);
    if (req.method === 'HEAD') return sendLogHead(res, 'text/plain', await jobs.logSize(actor, targetOf(req)));
    await sendLogText(res, await jobs.logPages(actor, targetOf(req)));
  });

  both('getJobLogHtml', 'getOrganizationJobLogHtml', async (req, res) => {
    await sendLogHtml(res, await jobs.logPages(actorOf(res), targetOf(req)));
  });

  both('deleteJobLog', 'deleteOrganizationJobLog', async (req, res) => {
    await jobs.deleteLog(actorOf(res), targetOf(req));
    res.status(204).end();
  });

  both('getJobEnv', 'getOrganizationJobEnv', async (req, res) => {
    const { context, agent } = await jobs.env(actorOf(res), targetOf(req));
    const env = jobEnv(context, agent, publicUrl);
    if (req.accepts(['application/json', 'text/plain']) === 'text/plain') sendEnvText(res, env);
    else res.json({ env });
  });

  both('getJobEnvText', 'getOrganizationJobEnvText', async (req, res) => {
    const { context, agent } = await jobs.env(actorOf(res), targetOf(req));
    sendEnvText(res, jobEnv(context, agent, publicUrl));
  });

  return api.router;
}

/** A build's step uploads (the pipelines its jobs uploaded): list by cursor, get one with its definition. */
export function stepUploadRoutes(uploads: PipelineUploadService, publicUrl: string) {
  const api = operationRouter();
  const buildUrlOf = (item: BuildWithJobs) => buildUrls(publicUrl, item.actor.organization.slug, item.pipeline.slug, item.build.number).url;

  api.on('listStepUploads', async (req, res) => {
    const perPage = req.query.per_page ?? 30;
    const {
      item,
      uploads: page,
      next,
    } = await uploads.list(actorOf(res), req.params.pipeline_slug, req.params.build_number, {
      filter: req.query.filter,
      after: req.query.after,
      before: req.query.before,
      limit: perPage,
    });
    const url = buildUrlOf(item);
    res.json({ items: page.map((u) => serializeStepUpload(u, url)), links: cursorLinks(req, publicUrl, next, perPage) });
  });

  api.on('getStepUpload', async (req, res) => {
    const { item, upload } = await uploads.get(actorOf(res), req.params.pipeline_slug, req.params.build_number, req.params.step_upload_id);
    res.json(serializeStepUploadDetail(upload, buildUrlOf(item)));
  });

  return api.router;
}
