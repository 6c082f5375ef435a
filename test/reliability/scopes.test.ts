/**
 * Scope matrix (issue 7, item 3), generated from the spec: every operation with a bearer
 * requirement, sent with a token that has every scope but one of the operation's, in turn, at
 * the caller's own real objects with a valid body. Each answer is a 403 naming the missing scope,
 * never a 2xx, and nothing is written. Operations that need no scope work with a token that has
 * none.
 */
import express from 'express';
import request from 'supertest';
import { guardRouter, guardsFromSpec } from '../../src/http/middleware/auth';
import { errorHandler } from '../../src/http/middleware/error-handler';
import { createLogger } from '../../src/http/middleware/logger';
import { describeEachDatabase } from '../support/context';
import { BODIES, fillPath, givenTenant, ownedRows, send, specOperations, type Tenant, TENANT_SETUP_MS } from './spec-operations';
import { SCOPES, type Scope } from '../../src/core/identity';

const operations = specOperations().filter((op) => op.auth === 'bearer');
const scoped = operations.flatMap((op) => op.scopes.map((scope) => [op.operationId, scope, op] as const));

describe('the scope matrix covers the spec', () => {
  it('every scope an operation names is a scope tokens can have', () => {
    expect(operations.flatMap((op) => op.scopes).filter((s) => !(SCOPES as readonly string[]).includes(s))).toEqual([]);
    // No scope: the access token's own two operations, and the emojis (the docs: "Required scope: none").
    expect(scoped.length).toBeGreaterThanOrEqual(operations.length - 3);
  });

  it('an operation naming several scopes needs every one of them', async () => {
    // The spec names one scope per operation today; the guard must not stop at the first.
    const guards = guardsFromSpec({ paths: { '/both': { get: { security: [{ bearerAuth: ['read_builds', 'write_builds'] }] } } } });
    const appWith = (scopes: Scope[]) => {
      const app = express();
      app.use((_req, res, next) => {
        const now = new Date();
        res.locals.principal = {
          token: { id: 'token', description: null, scopes, createdAt: now, expiresAt: now },
          user: { id: 'user', name: 'User', email: 'user@example.com', createdAt: now },
          organizations: new Map(),
          organizationsBySlug: new Map(),
        };
        next();
      });
      app.use(guardRouter(guards));
      app.get('/both', (_req, res) => {
        res.json({ ok: true });
      });
      app.use(errorHandler(createLogger('silent')));
      return app;
    };
    expect((await request(appWith(['read_builds'])).get('/both')).body).toEqual({ message: "Your access token doesn't have the write_builds scope" });
    expect((await request(appWith(['write_builds'])).get('/both')).body).toEqual({ message: "Your access token doesn't have the read_builds scope" });
    expect((await request(appWith(['read_builds', 'write_builds'])).get('/both')).status).toBe(200);
  });
});

describeEachDatabase('scopes', (ctx) => {
  let t: Tenant;
  let before: Record<string, string[]>;
  let requests = 0;

  beforeAll(async () => {
    t = await givenTenant(ctx(), 'scopes');
    before = await ownedRows(ctx(), t.org.id);
  }, TENANT_SETUP_MS);

  afterAll(() => {
    process.stdout.write(`scopes [${ctx().kind}]: ${operations.length} bearer operations, ${scoped.length} (operation, scope) cases, ${requests} requests\n`);
  });

  it.each(scoped)('%s without %s: 403 naming it', async (_id, scope, op) => {
    const token = await ctx().givenToken(
      t.admin,
      [t.org],
      SCOPES.filter((s) => s !== scope),
    );
    const res = await send(ctx(), op, fillPath(op, t.params), token, BODIES[op.operationId]?.(t));
    requests++;
    expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { message: `Your access token doesn't have the ${scope} scope` } });
  });

  it.each(operations.filter((op) => op.scopes.length === 0).map((op) => [op.operationId, op] as const))('%s needs no scope', async (_id, op) => {
    const token = await ctx().givenToken(t.admin, [t.org], []);
    const res = await send(ctx(), op, fillPath(op, t.params), token, BODIES[op.operationId]?.(t));
    requests++;
    expect(res.status).toBeLessThan(300);
  });

  it('wrote nothing without the scope', async () => {
    // The token rows the cases made are the only change.
    const after = await ownedRows(ctx(), t.org.id);
    const { access_tokens: _a, access_token_organizations: _o, ...rest } = after;
    const { access_tokens: _b, access_token_organizations: _p, ...was } = before;
    expect(rest).toEqual(was);
  });
});
