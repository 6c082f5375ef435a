/**
 * The binder of src/http/operation.ts on its own (no validator, no store): a handler is mounted
 * on the method and path the spec gives its operationId, integer path parameters reach it as
 * numbers, and an operationId the spec lacks, or one bound twice, is refused when the routes
 * are built rather than left unanswered.
 */
import express from 'express';
import request from 'supertest';
import { operationRouter } from '../../src/http/operation';

const appOf = (router: express.Router) => express().use(router);

describe('operationRouter', () => {
  it("mounts a handler on its operation's method and path, with integer path parameters as numbers", async () => {
    const api = operationRouter();
    const seen: unknown[] = [];
    api.on('cancelBuild', (req, res) => {
      seen.push(req.params);
      res.status(200).end();
    });
    const app = appOf(api.router);
    await request(app).put('/v2/organizations/acme/pipelines/app/builds/42/cancel').expect(200);
    expect(seen).toEqual([{ org_slug: 'acme', pipeline_slug: 'app', build_number: 42 }]);
    // Not its method, nor another operation's path.
    await request(app).get('/v2/organizations/acme/pipelines/app/builds/42/cancel').expect(404);
    await request(app).put('/v2/organizations/acme/pipelines/app/builds/42/rebuild').expect(404);
    expect(seen).toHaveLength(1);
  });

  it('leaves text path parameters as they were matched', async () => {
    const api = operationRouter();
    const seen: unknown[] = [];
    api.on('getAgentJob', (req, res) => {
      seen.push(req.params);
      res.status(200).end();
    });
    await request(appOf(api.router)).get('/v3/jobs/0190b6b5-1c1e-7000-8000-000000000001').expect(200);
    expect(seen).toEqual([{ job_id: '0190b6b5-1c1e-7000-8000-000000000001' }]);
  });

  it('refuses an operation the spec does not have, and an operation bound twice', () => {
    expect(() => operationRouter({ paths: {} }).on('getBuild', () => undefined)).toThrow('No operation getBuild in the spec');
    const api = operationRouter();
    api.on('getBuild', () => undefined);
    expect(() => api.on('getBuild', () => undefined)).toThrow('Operation getBuild is bound twice');
  });
});
