/**
 * `buildkite-agent meta-data set | set-batch | get | exists | keys` on the agent API (every call
 * a POST): through a job the agent runs (its build is the store), or for reads a build of the
 * agent's organization by id. The rules are the builds area's (src/builds/meta-data.ts).
 */
import type { Response } from 'express';
import type { MetaDataService } from '../builds/meta-data';
import { operationRouter } from '../http/contract/operation';
import { agentOf } from './locals';

export function agentMetaDataRoutes(metaData: MetaDataService) {
  const api = operationRouter();
  const ofJob = (res: Response, jobId: string) => metaData.buildOfJob(agentOf(res), jobId);
  const ofBuild = (res: Response, buildId: string) => metaData.buildById(agentOf(res), buildId);

  api.on('setJobMetaData', async (req, res) => {
    const { key, value } = req.body;
    await metaData.set(await ofJob(res, req.params.job_id), [{ key, value }]);
    res.json({ key, value });
  });

  api.on('setJobMetaDataBatch', async (req, res) => {
    const items = req.body.items.map(({ key, value }) => ({ key, value }));
    await metaData.set(await ofJob(res, req.params.job_id), items);
    res.json({ items });
  });

  api.on('getJobMetaData', async (req, res) => {
    const { key } = req.body;
    res.json({ key, value: await metaData.get(await ofJob(res, req.params.job_id), key) });
  });

  api.on('jobMetaDataExists', async (req, res) => {
    res.json({ exists: await metaData.exists(await ofJob(res, req.params.job_id), req.body.key) });
  });

  api.on('jobMetaDataKeys', async (req, res) => {
    res.json(await metaData.keys(await ofJob(res, req.params.job_id)));
  });

  api.on('getBuildMetaData', async (req, res) => {
    const { key } = req.body;
    res.json({ key, value: await metaData.get(await ofBuild(res, req.params.build_id), key) });
  });

  api.on('buildMetaDataExists', async (req, res) => {
    res.json({ exists: await metaData.exists(await ofBuild(res, req.params.build_id), req.body.key) });
  });

  api.on('buildMetaDataKeys', async (req, res) => {
    res.json(await metaData.keys(await ofBuild(res, req.params.build_id)));
  });

  return api.router;
}
