/**
 * Builds the Express app: request id and logging, parsers, the meta routes, authentication,
 * per-operation scope guards, express-openapi-validator, the resource routes and the one error
 * handler. Nothing here listens; src/server.ts does.
 */
import express, { NextFunction, Request, Response } from 'express';
import { accessTokenRoutes } from './access-token/routes';
import { AGENT_API_PATH, agentApiRoutes, agentAuth, agentChunkBodyParser } from './agent-api/routes';
import { agentAnnotationRoutes } from './agent-api/annotations';
import { agentArtifactRoutes } from './agent-api/artifacts';
import { agentMetaDataRoutes } from './agent-api/meta-data';
import { oidcRoutes } from './agent-api/oidc';
import { ANNOTATION_BODY_PATHS, annotationRoutes, annotationRequestLimit } from './annotations/routes';
import { pipelineScheduleRoutes } from './pipeline-schedules/routes';
import { ruleRoutes } from './rules/routes';
import { pipelineTriggerRoutes } from './pipeline-triggers/routes';
import { agentRoutes } from './agents/routes';
import { clusterRoutes } from './clusters/routes';
import { agentSecretRoutes } from './agent-api/secrets';
import { artifactRoutes } from './artifacts/routes';
import { ARTIFACT_UPLOADS_PATH, parseArtifactUpload } from './artifacts/upload';
import { jobRoutes, stepUploadRoutes } from './builds/jobs/routes';
import { serializeHeldJobs } from './builds/jobs/serialize';
import { buildRoutes, type TestEngineRuns } from './builds/routes';
import { deliveryRoutes, type RawBodyRequest } from './incoming-webhooks/routes';
import { authenticate, guardRouter, guardsFromSpec } from './http/middleware/auth';
import { jsonBodyParsers, refuseDeclaredOversize, rejectDeepJson } from './http/middleware/body';
import { bodyForms } from './http/contract/body-forms';
import { errorHandler } from './http/middleware/error-handler';
import { NotFoundError } from './core/errors';
import { countFailedAuthentication, rateLimit } from './http/middleware/rate-limit';
import { rejectNulCharacters } from './http/middleware/nul';
import { operationRouter } from './http/contract/operation';
import { joinRouteTables, onlyUnder } from './http/contract/route-table';
import { parameterRouter } from './http/contract/parameters';
import { openApiValidator } from './http/contract/openapi-validator';
import { requestLogger, type Logger } from './http/middleware/logger';
import { answerOptions, specPathIndex, tagOperation } from './http/contract/spec-paths';
import { corsMiddleware } from './http/middleware/cors';
import type { Metrics, MetricsSettings } from './metrics/registry';
import { docsRoutes } from './docs/routes';
import { badgeRoutes } from './badges/routes';
import { organizationRoutes } from './organizations/routes';
import { auditRoutes } from './audit/routes';
import { invitationRoutes } from './invitations/routes';
import { repositoryConnectionRoutes } from './repository-connections/routes';
import { userRoutes } from './user/routes';
import { pipelineRoutes } from './pipelines/routes';
import { pipelineTemplateRoutes } from './pipeline-templates/routes';
import { emojiRoutes } from './emojis/routes';
import type { TrustProxy } from './config';
import type { Services } from './services';
import { ping } from './db/knex';
import { loadSpec } from './spec';
import { suiteRoutes } from './suites/routes';
import { teamRoutes } from './teams/routes';
import { notificationServiceRoutes } from './notification-services/routes';
import { notificationDeliveryRoutes } from './notifications/routes';
import { serializeTestEngine } from './suites/serialize';
import { parseUploadMultipart } from './uploads/multipart';
import { uploadAuth, uploadJsonBody, uploadRoutes, UPLOADS_PATH } from './uploads/routes';
import { clock } from './core/clock';
import type { TestControls } from './test-controls/service';
import { TEST_CONTROLS_PATH, testControlRoutes, testControlsGate } from './test-controls/routes';
import { webRoutes } from './web/routes';

/** What the app takes from the services (src/services.ts), and the HTTP settings. */
export interface AppDeps extends Pick<
  Services,
  | 'db'
  | 'tokens'
  | 'organizations'
  | 'audit'
  | 'invitations'
  | 'repositoryConnections'
  | 'pipelines'
  | 'badges'
  | 'builds'
  | 'agents'
  | 'agentWork'
  | 'jobs'
  | 'pipelineUploads'
  | 'steps'
  | 'oidcIssuer'
  | 'oidcTokens'
  | 'suites'
  | 'uploads'
  | 'deliveries'
  | 'annotations'
  | 'metaData'
  | 'rateLimiter'
  | 'artifacts'
  | 'pipelineTemplates'
  | 'emojis'
  | 'pipelineSchedules'
  | 'rules'
  | 'pipelineTriggers'
  | 'teams'
  | 'clusters'
  | 'notificationServices'
  | 'notifications'
  | 'metricsCounts'
  | 'webSessions'
  | 'changes'
  | 'liveStreams'
> {
  logger: Logger;
  publicUrl: string;
  bodyLimitBytes: number;
  /** Largest `POST /v1/uploads` body (JSON or multipart): 5,000 results take several MB. */
  uploadBodyLimitBytes: number;
  validateResponses: boolean;
  /** Express's `trust proxy`: which proxies' `X-Forwarded-For` names the client (TRUST_PROXY). Default: none. */
  trustProxy?: TrustProxy;
  /** What `GET /v2/meta` answers as `webhook_ips` (WEBHOOK_IPS); default none. */
  webhookIps?: string[];
  /** false once shutdown has begun: readiness turns 503 so load balancers stop sending. */
  isAccepting?: () => boolean;
  /** Browser origins allowed across origins (CORS_ORIGINS); default none: no CORS headers. */
  corsOrigins?: string[];
  /** `GET /metrics` (METRICS_ENABLED, METRICS_TOKEN); default off. */
  metrics?: MetricsSettings;
  /** The reset and clock endpoints (WINDSOCK_TEST_CONTROLS=true); absent, /_windsock/ answers 404. */
  testControls?: TestControls;
}

export function createApp(deps: AppDeps): express.Express {
  const spec = loadSpec();
  const app = express();
  app.disable('x-powered-by');
  // No conditional responses: no operation of the contract documents a 304. Express would hash
  // every body for an ETag (SHA-1 of a 100 KB build list was about 3% of its CPU), and it
  // answers a request with If-None-Match (`*` matches anything) or If-Modified-Since with a 304
  // whenever it can: both headers are dropped (below) and every GET gets its body.
  app.set('etag', false);
  // Bracket arrays (`state[]=a&state[]=b`) and `meta_data[key]=value`, as the real API takes them.
  app.set('query parser', 'extended');
  // The client's address (failed-authentication budget, logs) is the socket's unless proxies are trusted.
  app.set('trust proxy', deps.trustProxy ?? false);

  const paths = specPathIndex(spec.doc);
  // The spec operation each request names, for the log line and the metrics.
  app.use(tagOperation(paths));
  app.use(requestLogger(deps.logger));
  let metrics: Metrics | undefined;
  if (deps.metrics?.enabled) {
    // prom-client loads only where metrics are on; `typeof import` types the CommonJS require.
    const registry: typeof import('./metrics/registry') = require('./metrics/registry');
    metrics = new registry.Metrics(deps.db, deps.metricsCounts);
  }
  if (metrics) app.use(metrics.recordRequests());
  // OPTIONS answers from the spec, and CORS for the configured origins only.
  app.use(answerOptions(paths, corsMiddleware(deps.corsOrigins ?? [], paths)));
  // Status badges revalidate with If-None-Match (their ETag), which the app drops just below.
  app.use(onlyUnder('/badges', badgeRoutes(deps.badges)));
  app.use((req: Request, res: Response, next: NextFunction) => {
    // Express 5 makes req.query a getter that re-parses on each read, which would drop the
    // validator's type coercion; pin the parsed object so coerced values stick.
    Object.defineProperty(req, 'query', { value: { ...req.query }, writable: true, configurable: true, enumerable: true });
    delete req.headers['if-none-match'];
    delete req.headers['if-modified-since'];
    // Shutting down: keep-alive clients reconnect (to another instance) after this response.
    if (deps.isAccepting && !deps.isAccepting()) res.setHeader('Connection', 'close');
    next();
  });
  // The upload API: its suite token is checked before the body is read, and its body gets its
  // own, larger limit (the parsers below skip a body already parsed).
  const jsonTypes = ['application/json', 'application/*+json'];
  app.post(
    UPLOADS_PATH,
    refuseDeclaredOversize(deps.uploadBodyLimitBytes),
    uploadAuth(deps.uploads),
    ...uploadJsonBody(deps.uploadBodyLimitBytes, jsonTypes),
    parseUploadMultipart({ fileSize: deps.uploadBodyLimitBytes }),
  );
  // Artifact content: the signed form's file is streamed into staging, not parsed into memory.
  app.post(ARTIFACT_UPLOADS_PATH, parseArtifactUpload(deps.artifacts));
  // The agent API: its agent token is checked before the body is read.
  app.use(AGENT_API_PATH, agentAuth(deps.agents));
  // The real agent's log chunks: gzip-compressed text/plain (JSON chunks go to the parsers below).
  app.post(`${AGENT_API_PATH}/jobs/:job_id/chunks`, ...agentChunkBodyParser(deps.bodyLimitBytes));
  // Webhook deliveries are signed over the exact bytes sent, so their parser keeps them; no other
  // route pays for that. A body parsed here is skipped by the parsers below.
  app.use(
    '/deliver',
    refuseDeclaredOversize(deps.bodyLimitBytes),
    express.json({
      limit: deps.bodyLimitBytes,
      type: jsonTypes,
      verify: (req, _res, buf) => {
        Object.assign(req, { rawBody: buf } satisfies Partial<RawBodyRequest>);
      },
    }),
  );
  // An annotation's body may be 1 MiB however the request limit is set: its creates get a limit that fits one.
  const annotationLimit = annotationRequestLimit(deps.bodyLimitBytes);
  app.post(ANNOTATION_BODY_PATHS, refuseDeclaredOversize(annotationLimit), express.json({ limit: annotationLimit, type: jsonTypes }));
  app.use(jsonBodyParsers(spec.doc, deps.bodyLimitBytes, jsonTypes));
  app.use(rejectDeepJson());

  // A browser opening the root gets the web interface (sign-in, then the organization's page);
  // an API client (JSON or anything) gets the API's root document below.
  app.get('/', (req, res, next) => (req.accepts(['application/json', 'text/html']) === 'text/html' ? res.redirect(303, '/login') : next()));
  const meta = operationRouter(spec.doc);
  meta.on('getRoot', (_req, res) => {
    res.json({ message: 'Windsock REST API: the Buildkite REST API v2 dialect. See /openapi.json.', timestamp: Math.floor(clock.nowMs() / 1000) });
  });
  meta.on('getHealth', (_req, res) => {
    res.json({ status: 'ok' });
  });
  meta.on('getReadiness', async (_req, res) => {
    if (deps.isAccepting && !deps.isAccepting()) {
      res.setHeader('Retry-After', '5');
      res.status(503).json({ message: 'Shutting down' });
      return;
    }
    try {
      await ping(deps.db);
      res.json({ status: 'ok' });
    } catch {
      res.setHeader('Retry-After', '5');
      res.status(503).json({ message: 'The database is unavailable' });
    }
  });
  // The Meta API needs no authentication (its docs say so): answered before /v2's.
  meta.on('getMeta', (_req, res) => {
    res.json({ webhook_ips: deps.webhookIps ?? [] });
  });
  app.use(meta.router);
  // The document as text, parsed and serialized once (not a JSON body built per request).
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(spec.json);
  });
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(spec.yaml);
  });
  app.get('/openapi-3.0.json', (_req, res) => {
    res.type('application/json').send(spec.json30);
  });
  // Outside the contract like the documents above: the docs page renders them, the metrics are
  // the operator's (off unless enabled: then the validator below answers 404).
  app.use(onlyUnder('/docs', docsRoutes()));
  if (metrics) app.get('/metrics', metrics.handler(deps.metrics?.token));
  // The web interface (src/web): pages for browsers at the web_urls, before the API's own 404.
  // A path of the spec is never a page (`isReservedSegment`): its requests skip the pages' routes.
  const pages = webRoutes(deps);
  app.use((req: Request, res: Response, next: NextFunction) => (res.locals.specRoute ? next() : pages(req, res, next)));

  app.use('/v2', authenticate(deps.tokens), rateLimit(deps.rateLimiter));
  app.use(onlyUnder(TEST_CONTROLS_PATH, testControlsGate(deps.testControls, deps.tokens)));
  app.use(guardRouter(guardsFromSpec(spec.doc), (id) => deps.organizations.allowedIpAddresses(id)));
  // Integers, dates, booleans and enums in the query and path read strictly, nulls of optional
  // body fields dropped: before the validator, so it sees what the client meant.
  app.use(parameterRouter(spec.doc));
  // Fields real clients send in a second primitive form, made the contract's (src/http/contract/body-forms.ts).
  app.use(bodyForms());
  app.use(
    openApiValidator(spec.doc, {
      validateRequests: { allowUnknownQueryParameters: true, coerceTypes: false, allErrors: true },
      validateResponses: deps.validateResponses ? { removeAdditional: false } : false,
      validateSecurity: false,
      // Each path's validator would check its one-path document against the OpenAPI schema
      // again (the library compiles that schema anew for every validator: about 55 ms per path's
      // first request, 8 s of the contract fuzzer's 46). The whole document is checked once
      // instead, by `npm run lint:spec` and by the library's own check in test/http/openapi-validator.test.ts.
      validateApiSpec: false,
      validateFormats: true,
      // Multipart is only the upload API's, parsed above (src/uploads/multipart.ts) so that its
      // errors are ours; the validator checks the fields it produced.
      fileUploader: false,
      // The meta routes above answered already; nothing else is outside the contract.
      ignoreUndocumented: false,
    }),
  );

  app.use(rejectNulCharacters());

  // A build's test_engine: its Test Engine runs, from the suites above builds.
  const testEngineRuns: TestEngineRuns = async (actor, ids) =>
    new Map([...(await deps.suites.runsOfBuilds(actor, ids))].map(([id, runs]) => [id, serializeTestEngine(runs)]));
  // Every area's operations as one route table: one lookup per request (route-table.ts).
  app.use(
    joinRouteTables([
      accessTokenRoutes(deps.tokens),
      userRoutes(),
      organizationRoutes(deps.organizations, deps.publicUrl, deps.rateLimiter.settings.perOrganization),
      auditRoutes(deps.audit, deps.publicUrl),
      invitationRoutes(deps.invitations, deps.publicUrl),
      repositoryConnectionRoutes(deps.repositoryConnections, deps.publicUrl),
      pipelineRoutes(deps.pipelines, deps.publicUrl),
      buildRoutes(deps.builds, deps.pipelines, deps.publicUrl, (ids) => deps.agents.byIds(ids), testEngineRuns),
      clusterRoutes(deps.clusters, deps.publicUrl),
      agentRoutes(deps.agents, async (agents) => serializeHeldJobs(await deps.agentWork.heldJobs(agents), deps.publicUrl), deps.publicUrl),
      agentApiRoutes(deps.agents, deps.agentWork, deps.pipelineUploads, deps.steps, { publicUrl: deps.publicUrl, bodyLimitBytes: deps.bodyLimitBytes }),
      jobRoutes(deps.jobs, deps.publicUrl),
      stepUploadRoutes(deps.pipelineUploads, deps.publicUrl),
      suiteRoutes(deps.suites, deps.publicUrl),
      uploadRoutes(deps.uploads),
      deliveryRoutes(deps.deliveries, deps.pipelineTriggers, deps.publicUrl),
      annotationRoutes(deps.annotations, deps.publicUrl),
      agentAnnotationRoutes(deps.annotations),
      agentMetaDataRoutes(deps.metaData),
      oidcRoutes(deps.oidcTokens, deps.oidcIssuer),
      artifactRoutes(deps.artifacts, deps.publicUrl),
      agentArtifactRoutes(deps.artifacts, deps.publicUrl),
      pipelineTemplateRoutes(deps.pipelineTemplates, deps.publicUrl),
      emojiRoutes(deps.emojis),
      pipelineScheduleRoutes(deps.pipelineSchedules, deps.publicUrl),
      ruleRoutes(deps.rules, deps.publicUrl),
      pipelineTriggerRoutes(deps.pipelineTriggers, deps.publicUrl),
      teamRoutes(deps.teams, deps.publicUrl),
      notificationServiceRoutes(deps.notificationServices, deps.publicUrl),
      notificationDeliveryRoutes(deps.notifications, (actor, id) => deps.notificationServices.get(actor, id), deps.publicUrl),
      agentSecretRoutes(deps.clusters, deps.agentWork),
      testControlRoutes(spec.doc, deps.testControls),
    ]),
  );

  app.use(() => {
    throw new NotFoundError('route');
  });
  app.use(countFailedAuthentication(deps.rateLimiter));
  app.use(errorHandler(deps.logger));
  return app;
}
