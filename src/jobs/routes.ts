/** The job endpoints under a build: thin handlers. */
import express, { Request, Response } from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { NotFoundError } from '../core/errors';
import { serializeJob } from '../builds/serialize';
import type { BuildWithJobs } from '../builds/service';
import { sendLogJson, sendLogText } from './log-output';
import { jobEnv } from './serialize';
import type { JobService } from './service';

type UnblockBody = NonNullable<operations['unblockJob']['requestBody']>['content']['application/json'];

export function jobRoutes(jobs: JobService, publicUrl: string) {
  const router = express.Router();
  const base = '/v2/organizations/:org_slug/pipelines/:pipeline_slug/builds/:build_number/jobs/:job_id';

  /** The caller, the pipeline, the build number and the job id of the path. */
  const target = (req: Request, res: Response) => {
    const number = Number(req.params.build_number);
    // The validator lets a number too large for a double through as Infinity: no build has it.
    if (!Number.isSafeInteger(number) || number < 1 || number > 2 ** 31 - 1) throw new NotFoundError('build');
    return [actorOf(res), String(req.params.pipeline_slug), number, String(req.params.job_id)] as const;
  };
  const jobJson = (res: Response, { item, jobId }: { item: BuildWithJobs; jobId: string }) => {
    const buildUrl = `${publicUrl}/v2/organizations/${item.actor.organization.slug}/pipelines/${item.pipeline.slug}/builds/${item.build.number}`;
    const webUrl = `${publicUrl}/${item.actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}`;
    res.json(
      serializeJob(
        item.jobs.find((j) => j.id === jobId)!,
        buildUrl,
        webUrl,
        null,
      ),
    );
  };
  const logUrl = (req: Request) => `${publicUrl}${req.path.replace(/\.txt$/, '')}`;

  router.put(`${base}/unblock`, async (req, res) => {
    jobJson(res, await jobs.unblock(...target(req, res), (req.body ?? {}) as UnblockBody));
  });

  router.put(`${base}/retry`, async (req, res) => {
    jobJson(res, await jobs.retry(...target(req, res)));
  });

  // Streamed from the store (./log-output): a log can be as large as JOB_LOG_LIMIT_BYTES.
  router.get(`${base}/log`, async (req, res) => {
    const pages = await jobs.logPages(...target(req, res));
    if (req.accepts(['application/json', 'text/plain']) === 'text/plain') await sendLogText(res, pages);
    else await sendLogJson(res, logUrl(req), pages);
  });

  router.get(`${base}/log.txt`, async (req, res) => {
    await sendLogText(res, await jobs.logPages(...target(req, res)));
  });

  router.delete(`${base}/log`, async (req, res) => {
    await jobs.deleteLog(...target(req, res));
    res.status(204).end();
  });

  router.get(`${base}/env`, async (req, res) => {
    const { context, agent } = await jobs.env(...target(req, res));
    res.json({ env: jobEnv(context, agent, publicUrl) });
  });

  return router;
}
