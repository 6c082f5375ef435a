/** The job endpoints under a build: thin handlers. */
import type { Response } from 'express';
import { BadRequestError } from '../../core/errors';
import { actorOf } from '../../http/auth';
import { operationRouter, type OperationRequest } from '../../http/operation';
import { buildUrls, serializeJob } from '../serialize';
import type { BuildWithJobs } from '../service';
import { sendLogHtml, sendLogJson, sendLogTail, sendLogText, suffixRange } from './log-output';
import { sendEnvText } from './env-text';
import { jobEnv } from './serialize';
import type { JobService } from './service';

/** The operations on one job of a build: they share its path parameters. */
type JobOperation =
  'unblockJob' | 'retryJob' | 'reprioritizeJob' | 'getJobLog' | 'getJobLogText' | 'getJobLogHtml' | 'deleteJobLog' | 'getJobEnv' | 'getJobEnvText';

export function jobRoutes(jobs: JobService, publicUrl: string) {
  const api = operationRouter();

  /** The caller, the pipeline, the build number and the job id of the path. */
  const target = (req: OperationRequest<JobOperation>, res: Response) =>
    [actorOf(res), req.params.pipeline_slug, req.params.build_number, req.params.job_id] as const;
  const jobJson = ({ item, jobId }: { item: BuildWithJobs; jobId: string }) => {
    const { url, webUrl } = buildUrls(publicUrl, item.actor.organization.slug, item.pipeline.slug, item.build.number);
    return serializeJob(
      item.jobs.find((j) => j.id === jobId)!,
      url,
      webUrl,
      null,
    );
  };
  const logUrl = (req: { path: string }) => `${publicUrl}${req.path.replace(/\.(txt|html)$/, '')}`;

  api.on('unblockJob', async (req, res) => {
    res.json(jobJson(await jobs.unblock(...target(req, res), req.body ?? {})));
  });

  api.on('retryJob', async (req, res) => {
    res.json(jobJson(await jobs.retry(...target(req, res))));
  });

  api.on('reprioritizeJob', async (req, res) => {
    res.json(jobJson(await jobs.reprioritize(...target(req, res), req.body.priority)));
  });

  api.on('reprioritizeOrganizationJob', async (req, res) => {
    res.json(jobJson(await jobs.reprioritizeById(actorOf(res), req.params.job_id, req.body.priority)));
  });

  // Streamed from the store (./log-output): a log can be as large as JOB_LOG_LIMIT_BYTES.
  // `Range: bytes=-N`: the tail (the docs allow it with text only).
  api.on('getJobLog', async (req, res) => {
    const format = req.accepts(['application/json', 'text/plain', 'text/html']);
    const range = req.get('range');
    const tail = range !== undefined ? suffixRange(range, format === 'text/plain') : undefined;
    if (tail && 'refused' in tail) throw new BadRequestError(tail.refused);
    const pages = await jobs.logPages(...target(req, res));
    if (tail) await sendLogTail(res, pages, tail.bytes);
    else if (format === 'text/plain') await sendLogText(res, pages);
    else if (format === 'text/html') await sendLogHtml(res, pages);
    else await sendLogJson(res, logUrl(req), pages);
  });

  api.on('getJobLogText', async (req, res) => {
    await sendLogText(res, await jobs.logPages(...target(req, res)));
  });

  api.on('getJobLogHtml', async (req, res) => {
    await sendLogHtml(res, await jobs.logPages(...target(req, res)));
  });

  api.on('deleteJobLog', async (req, res) => {
    await jobs.deleteLog(...target(req, res));
    res.status(204).end();
  });

  api.on('getJobEnv', async (req, res) => {
    const { context, agent } = await jobs.env(...target(req, res));
    const env = jobEnv(context, agent, publicUrl);
    if (req.accepts(['application/json', 'text/plain']) === 'text/plain') sendEnvText(res, env);
    else res.json({ env });
  });

  api.on('getJobEnvText', async (req, res) => {
    const { context, agent } = await jobs.env(...target(req, res));
    sendEnvText(res, jobEnv(context, agent, publicUrl));
  });

  return api.router;
}
