/**
 * Artifacts over HTTP: the REST operations (list by build and by job, get, download, delete),
 * the agent API's batch create, state report and search (under /v3, after app.ts's agent
 * authentication), and the two signed URLs that need no token: the upload form and the content.
 */
import type { Request, Response } from 'express';
import type { Agent } from '../agents/repository';
import { actorOf } from '../http/auth';
import { bodyIn, operationRouter } from '../http/operation';
import { pageRequest, setLinkHeader } from '../http/pagination';
import type { BuildWithJobs } from '../builds/service';
import { serializeArtifact, serializeFoundArtifact } from './serialize';
import { DOWNLOAD_URL_SECONDS, SEARCH_URL_SECONDS, type ArtifactService } from './service';
import { stagedFile } from './upload';

export function artifactRoutes(service: ArtifactService, publicUrl: string) {
  const api = operationRouter();
  const buildUrl = (item: BuildWithJobs) =>
    `${publicUrl}/v2/organizations/${item.actor.organization.slug}/pipelines/${item.pipeline.slug}/builds/${item.build.number}`;
  const agentOf = (res: Response) => res.locals.agent as Agent;
  /**
   * The agent's own URLs (upload form, content) are on the address it reached the agent API at,
   * which it can reach, rather than PUBLIC_URL, which an agent on an inner network may not.
   */
  const agentBase = (req: Pick<Request, 'protocol' | 'get'>) => `${req.protocol}://${req.get('host') ?? new URL(publicUrl).host}`;

  api.on('listBuildArtifacts', async (req, res) => {
    const p = pageRequest(req);
    const { item, items, total } = await service.listByBuild(actorOf(res), req.params.pipeline_slug, req.params.build_number, p.offset, p.perPage);
    setLinkHeader(req, res, publicUrl, p, { total });
    res.json(items.map((a) => serializeArtifact(a, buildUrl(item))));
  });

  api.on('listJobArtifacts', async (req, res) => {
    const p = pageRequest(req);
    const { item, items, total } = await service.listByJob(
      actorOf(res),
      req.params.pipeline_slug,
      req.params.build_number,
      req.params.job_id,
      p.offset,
      p.perPage,
    );
    setLinkHeader(req, res, publicUrl, p, { total });
    res.json(items.map((a) => serializeArtifact(a, buildUrl(item))));
  });

  api.on('getArtifact', async (req, res) => {
    const { pipeline_slug, build_number, job_id, artifact_id } = req.params;
    const { item, artifact } = await service.get(actorOf(res), pipeline_slug, build_number, job_id, artifact_id);
    res.json(serializeArtifact(artifact, buildUrl(item)));
  });

  api.on('downloadArtifact', async (req, res) => {
    const { pipeline_slug, build_number, job_id, artifact_id } = req.params;
    const artifact = await service.downloadable(actorOf(res), pipeline_slug, build_number, job_id, artifact_id);
    const url = service.contentUrl(publicUrl, artifact.id, DOWNLOAD_URL_SECONDS);
    res.setHeader('Location', url);
    res.status(302).json({ url });
  });

  api.on('deleteArtifact', async (req, res) => {
    const { pipeline_slug, build_number, job_id, artifact_id } = req.params;
    await service.delete(actorOf(res), pipeline_slug, build_number, job_id, artifact_id);
    res.status(204).end();
  });

  // The bytes, with ranges (206, 416) by Express's sendFile; the type is the artifact's own.
  api.on('getArtifactContent', async (req, res) => {
    const content = await service.content(req.params.artifact_id, { expires: req.query.expires, signature: req.query.signature });
    res.setHeader('Content-Type', content.contentType);
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

  api.on('createArtifacts', async (req, res) => {
    const batch = await service.create(agentOf(res), req.params.job_id, req.body, agentBase(req));
    res.status(201).json({ id: batch.id, artifact_ids: batch.artifactIds, upload_instructions: batch.instructions, per_artifact_instructions: {} });
  });

  api.on('updateArtifacts', async (req, res) => {
    const artifacts = await service.updateStates(agentOf(res), req.params.job_id, req.body.artifacts);
    res.json({ artifacts: artifacts.map((a) => ({ id: a.id, state: a.state })) });
  });

  api.on('searchArtifacts', async (req, res) => {
    const q = req.query;
    const found = await service.search(agentOf(res), req.params.build_id, {
      query: q.query,
      scope: q.scope,
      state: q.state,
      includeRetried: q.include_retried_jobs,
      includeDuplicates: q.include_duplicates,
    });
    res.json(found.map((a) => serializeFoundArtifact(a, service.contentUrl(agentBase(req), a.id, SEARCH_URL_SECONDS))));
  });

  return api.router;
}
