import { isUnavailableError } from '../../src/db/knex';
import { createApp } from '../../src/app';
import { createLogger } from '../../src/http/middleware/logger';
import { createServices } from '../../src/services';
import request from 'supertest';

describe('an unreachable database', () => {
  it('answers 503 with Retry-After, never 401 or 500, and readiness turns 503', async () => {
    const logger = createLogger('silent');
    // Nothing listens on port 1: the connection is refused at once.
    const services = createServices({
      database: { kind: 'postgres', url: 'postgres://postgres@127.0.0.1:1/none' },
      secret: 'test-secret-test-secret-test-secret-0123456789',
      publicUrl: 'http://windsock.test',
      github: { apiUrl: undefined, token: undefined },
      githubEnterprise: { apiUrl: undefined, token: undefined },
      logger,
    });
    const app = createApp({
      ...services,
      logger,
      publicUrl: 'http://windsock.test',
      bodyLimitBytes: 1024,
      uploadBodyLimitBytes: 1024,
      validateResponses: true,
    });
    // A well-signed token, so the request reaches the database lookup.
    const { default: jwt } = await import('jsonwebtoken');
    const token = jwt.sign({ sub: 'u', jti: '00000000-0000-4000-8000-000000000000' }, services.keys.jwt, {
      algorithm: 'HS256',
      issuer: 'windsock',
      expiresIn: 60,
    });
    const res = await request(app).get('/v2/access-token').set('Authorization', `Bearer ${token}`).expect(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(typeof res.body.message).toBe('string');
    await request(app).get('/readyz').expect(503);
    await request(app).get('/healthz').expect(200);
    await services.db.destroy();
  });

  it('tells connection failures from query errors by code', () => {
    expect(isUnavailableError({ code: 'ECONNREFUSED' })).toBe(true);
    expect(isUnavailableError({ code: '57P01' })).toBe(true);
    expect(isUnavailableError({ code: '08006' })).toBe(true);
    expect(isUnavailableError({ code: 'SQLITE_BUSY' })).toBe(true);
    expect(isUnavailableError({ name: 'KnexTimeoutError' })).toBe(true);
    // node-pg's own connection failures have no code, only a fixed message.
    expect(isUnavailableError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnavailableError(new Error('ROLLBACK - Client has encountered a connection error and is not queryable'))).toBe(true);
    expect(isUnavailableError(new Error('timeout expired'))).toBe(true);
    expect(isUnavailableError(new Error('select * from "jobs" where "build_id" in ($1) - Connection terminated unexpectedly'))).toBe(true);
    expect(isUnavailableError(new Error('COMMIT; - Connection terminated unexpectedly'))).toBe(true);
    expect(isUnavailableError({ code: '42601', message: 'Connection terminated' })).toBe(false);
    expect(isUnavailableError({ code: '23505' })).toBe(false);
    expect(isUnavailableError(new Error('syntax error'))).toBe(false);
    expect(isUnavailableError(null)).toBe(false);
  });
});
