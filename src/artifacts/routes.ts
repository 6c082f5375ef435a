/**
 * Artifacts over HTTP: the REST operations (list by build and by job, get, download, delete) and
 * the two signed URLs that need no token: the upload form and the content. The agent API's batch
 * create, state report and search are src/agent-api/artifacts.ts.
 */
import type { Response } from 'express';
import { actorOf } from '../http/middleware/auth';
import { bodyIn, operationRouter, type OperationRequest } from '../http/contract/operation';
import { pageRequest, setLinkHeader } from '../http/responses/pagination';
import { buildUrls } from '../builds/serialize';
import type { BuildWithJobs } from '../builds/service';
import { ARTIFACT_CSP, contentDisposition, servedAs } from './content-policy';
import { serializeArtifact } from './serialize';
import { DOWNLOAD_URL_SECONDS, type ArtifactService, type BuildRef } from './service';
import { stagedFile } from './upload';

export function artifactRoutes(service: ArtifactService, publicUrl: string) {
  const api = operationRouter();
  const buildUrl = (item: BuildWithJobs) => buildUrls(publicUrl, item.actor.organization.slug, item.pipeline.slug, item.build.number).url;

  api.on('listBuildArtifacts', async (req, res) => {
    const p = pageRequest(req);
    const filter = { state: req.query.state, path: req.query.path };
    const { item, items, total } = await service.listByBuild(actorOf(res), req.params.pipeline_slug, req.params.build_number, filter, p.offset, p.perPage);
    setLinkHeader(req, res, publicUrl, p, { total });
    res.json(items.map((a) => serializeArtifact(a, buildUrl(item))));
  });

  const listJob = async (req: OperationRequest<'listJobArtifacts' | 'listJobArtifactsByJobId'>, res: Response, where: BuildRef, jobId: string) => {
    const p = pageRequest(req);
    const { item, items, total } = await service.listByJob(actorOf(res), where, jobId, { state: req.query.state, path: req.query.path }, p.offset, p.perPage);
    setLinkHeader(req, res, publicUrl, p, { total });
    return items.map((a) => serializeArtifact(a, buildUrl(item)));
  };
  const byBuild = (params: { pipeline_slug: string; build_number: number }): BuildRef => ({ pipelineSlug: params.pipeline_slug, number: params.build_number });
  const byJob = (params: { job_id: string }): BuildRef => ({ jobId: params.job_id });

  api.on('listJobArtifacts', async (req, res) => {
    res.json(await listJob(req, res, byBuild(req.params), req.params.job_id));
  });
  api.on('listJobArtifactsByJobId', async (req, res) => {
    res.json(await listJob(req, res, byJob(req.params), req.params.job_id));
  });

  const get = async (res: Response, where: BuildRef, jobId: string, id: string) => {
    const { item, artifact } = await service.get(actorOf(res), where, jobId, id);
    return serializeArtifact(artifact, buildUrl(item));
  };
  api.on('getArtifact', async (req, res) => {
    res.json(await get(res, byBuild(req.params), req.params.job_id, req.params.artifact_id));
  });
  api.on('getArtifactByJobId', async (req, res) => {
    res.json(await get(res, byJob(req.params), req.params.job_id, req.params.artifact_id));
  });

  const download = async (res: Response, where: BuildRef, jobId: string, id: string) => {
    const artifact = await service.downloadable(actorOf(res), where, jobId, id);
    const url = await service.publicContentUrl(publicUrl, artifact, DOWNLOAD_URL_SECONDS);
    res.setHeader('Location', url);
    return { url };
  };
  api.on('downloadArtifact', async (req, res) => {
    res.status(302).json(await download(res, byBuild(req.params), req.params.job_id, req.params.artifact_id));
  });
  api.on('downloadArtifactByJobId', async (req, res) => {
    res.status(302).json(await download(res, byJob(req.params), req.params.job_id, req.params.artifact_id));
  });

  api.on('deleteArtifact', async (req, res) => {
    await service.delete(actorOf(res), byBuild(req.params), req.params.job_id, req.params.artifact_id);
    res.status(204).end();
  });
  api.on('deleteArtifactByJobId', async (req, res) => {
    await service.delete(actorOf(res), byJob(req.params), req.params.job_id, req.params.artifact_id);
    res.status(204).end();
  });

  // The bytes, with ranges (206, 416) by Express's sendFile, served so they can never run in
  // Windsock's origin (content-policy.ts): the headers go on first, so a refusal carries them too.
  api.on('getArtifactContent', async (req, res) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', ARTIFACT_CSP);
    const content = await service.content(req.params.artifact_id, { expires: req.query.expires, signature: req.query.signature });
    const served = servedAs(content.contentType);
    res.setHeader('Content-Type', served.contentType);
    res.setHeader('Content-Disposition', contentDisposition(served.disposition, content.filename));
    res.setHeader('Cache-Control', 'private, max-age=60');
    await new Promise<void>((resolve, reject) => {
      res.sendFile(content.file, { etag: false, lastModified: false, acceptRanges: true, dotfiles: 'allow' }, (err?: Error) => {
        // A 416 (or a file gone) before anything was sent goes to the error handler; a client gone mid-way is nobody's error.
        if (err && !res.headersSent) reject(err);
        else resolve();
      });
    });
  });

  api.on('uploadArtifactContent', async (req, res) => {
    await service.upload(bodyIn(req, 'multipart/form-data') ?? {}, stagedFile(req));
    res.status(204).end();
  });

  return api.router;
}
