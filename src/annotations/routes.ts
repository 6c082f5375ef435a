/** Annotations of builds and jobs (REST): thin handlers for list, create and delete at each of the three places. */
import type { Response } from 'express';
import { actorOf } from '../http/middleware/auth';
import { operationRouter, type OperationRequest, type OperationResponse } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializeAnnotation } from './serialize';
import { MAX_ANNOTATION_BODY_BYTES, type AnnotationService, type AnnotationTarget } from './service';

/**
 * The operations that take an annotation's body, as Express paths: app.ts gives their requests
 * a body limit that fits a body of 1 MiB (MAX_ANNOTATION_BODY_BYTES) once JSON-escaped.
 */
export const ANNOTATION_BODY_PATHS = [
  '/v2/organizations/:org_slug/pipelines/:pipeline_slug/builds/:build_number/annotations',
  '/v2/organizations/:org_slug/pipelines/:pipeline_slug/builds/:build_number/jobs/:job_id/annotations',
  '/v2/organizations/:org_slug/jobs/:job_id/annotations',
  '/v3/jobs/:job_id/annotations',
];

/** The request limit of those operations: the service's, or one that fits a 1 MiB body with its quotes and newlines escaped. */
export function annotationRequestLimit(bodyLimitBytes: number): number {
  return Math.max(bodyLimitBytes, 3 * MAX_ANNOTATION_BODY_BYTES);
}

type ListOperation = 'listBuildAnnotations' | 'listJobAnnotations' | 'listOrganizationJobAnnotations';
type CreateOperation = 'createBuildAnnotation' | 'createJobAnnotation' | 'createOrganizationJobAnnotation';

export function annotationRoutes(annotations: AnnotationService, publicUrl: string) {
  const api = operationRouter();

  const list = async (
    req: OperationRequest<ListOperation>,
    res: OperationResponse<ListOperation>,
    target: AnnotationTarget,
    // `scope` unset: the service's default (the build's own annotations for a build, as the docs say).
    { scope, omitBody = false }: { scope?: 'build' | 'job' | 'all'; omitBody?: boolean } = {},
  ) => {
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => annotations.list(target, offset, limit, scope));
    res.json(items.map((a) => serializeAnnotation(a, { omitBody })));
  };
  const create = async (req: OperationRequest<CreateOperation>, res: Response, target: AnnotationTarget) => {
    const { body, style, context, append, priority } = req.body;
    res.status(201).json(serializeAnnotation(await annotations.create(target, { body, style, context, append, priority })));
  };

  api.on('listBuildAnnotations', async (req, res) => {
    const target = await annotations.build(actorOf(res), req.params.pipeline_slug, req.params.build_number);
    await list(req, res, target, { scope: req.query.scope, omitBody: req.query.omit_body });
  });
  api.on('createBuildAnnotation', async (req, res) => {
    await create(req, res, await annotations.build(actorOf(res), req.params.pipeline_slug, req.params.build_number));
  });
  api.on('deleteBuildAnnotation', async (req, res) => {
    await annotations.delete(await annotations.build(actorOf(res), req.params.pipeline_slug, req.params.build_number), req.params.annotation_id);
    res.status(204).end();
  });

  api.on('listJobAnnotations', async (req, res) => {
    await list(req, res, await annotations.job(actorOf(res), req.params.pipeline_slug, req.params.build_number, req.params.job_id));
  });
  api.on('createJobAnnotation', async (req, res) => {
    await create(req, res, await annotations.job(actorOf(res), req.params.pipeline_slug, req.params.build_number, req.params.job_id));
  });
  api.on('deleteJobAnnotation', async (req, res) => {
    const target = await annotations.job(actorOf(res), req.params.pipeline_slug, req.params.build_number, req.params.job_id);
    await annotations.delete(target, req.params.annotation_id);
    res.status(204).end();
  });

  api.on('listOrganizationJobAnnotations', async (req, res) => {
    await list(req, res, await annotations.organizationJob(actorOf(res), req.params.job_id));
  });
  api.on('createOrganizationJobAnnotation', async (req, res) => {
    await create(req, res, await annotations.organizationJob(actorOf(res), req.params.job_id));
  });
  api.on('deleteOrganizationJobAnnotation', async (req, res) => {
    await annotations.delete(await annotations.organizationJob(actorOf(res), req.params.job_id), req.params.annotation_id);
    res.status(204).end();
  });

  return api.router;
}
