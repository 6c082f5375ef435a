/** The job endpoints under a build: thin handlers. */
import express from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { NotFoundError } from '../http/errors';
import { serializeJob } from '../builds/serialize';
import type { JobService } from './service';

type UnblockBody = NonNullable<operations['unblockJob']['requestBody']>['content']['application/json'];

export function jobRoutes(jobs: JobService, publicUrl: string) {
  const router = express.Router();
  const base = '/v2/organizations/:org_slug/pipelines/:pipeline_slug/builds/:build_number/jobs/:job_id';

  router.put(`${base}/unblock`, async (req, res) => {
    const actor = actorOf(res);
    const number = Number(req.params.build_number);
    if (!Number.isSafeInteger(number) || number < 1 || number > 2 ** 31 - 1) throw new NotFoundError('build');
    const { item, jobId } = await jobs.unblock(actor, String(req.params.pipeline_slug), number, String(req.params.job_id), (req.body ?? {}) as UnblockBody);
    const buildUrl = `${publicUrl}/v2/organizations/${actor.organization.slug}/pipelines/${item.pipeline.slug}/builds/${item.build.number}`;
    const webUrl = `${publicUrl}/${actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}`;
    res.json(serializeJob(item.jobs.find((j) => j.id === jobId)!, buildUrl, webUrl, null));
  });

  return router;
}
