/**
 * The binder of src/http/contract/operation.ts on its own (no validator, no store): a handler is mounted
 * on the method and path the spec gives its operationId, integer path parameters reach it as
 * numbers, and an operationId the spec lacks, or one bound twice, is refused when the routes
 * are built rather than left unanswered.
 */
import express from 'express';
import request from 'supertest';
import { operationRouter, type OperationId } from '../../src/http/contract/operation';

/** An app with one operation bound, whose handler records the path parameters it is given. */
function recording(operationId: OperationId) {
  const api = operationRouter();
  const seen: unknown[] = [];
  api.on(operationId, (req, res) => {
    seen.push(req.params);
    res.end();
  });
  return { app: express().use(api.router), seen };
}

describe('operationRouter', () => {
  it("mounts a handler on its operation's method and path, with integer path parameters as numbers", async () => {
    const { app, seen } = recording('cancelBuild');
    await request(app).put('/v2/organizations/acme/pipelines/app/builds/42/cancel').expect(200);
    expect(seen).toEqual([{ org_slug: 'acme', pipeline_slug: 'app', build_number: 42 }]);
    // Not its method, nor another operation's path.
    await request(app).get('/v2/organizations/acme/pipelines/app/builds/42/cancel').expect(404);
    await request(app).put('/v2/organizations/acme/pipelines/app/builds/42/rebuild').expect(404);
    expect(seen).toHaveLength(1);
  });

  it('leaves text path parameters as they were matched', async () => {
    const { app, seen } = recording('getAgentJob');
    await request(app).get('/v3/jobs/0190b6b5-1c1e-7000-8000-000000000001').expect(200);
    expect(seen).toEqual([{ job_id: '0190b6b5-1c1e-7000-8000-000000000001' }]);
  });

  it('refuses an operation the spec does not have, and an operation bound twice', () => {
    expect(() => operationRouter({ paths: {} }).on('getBuild', () => undefined)).toThrow('No operation getBuild in the spec');
    const api = operationRouter();
    api.on('getBuild', () => undefined);
    expect(() => api.on('getBuild', () => undefined)).toThrow('Operation getBuild is bound twice');
  });
});
