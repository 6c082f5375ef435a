/**
 * The validator mounted per documented path (src/http/contract/openapi-validator.ts): a request costs
 * the validator at most one route compilation (its own path's; one validator over the whole
 * spec compiled every route on every request, ~20% of a get-a-build's CPU, BENCHMARKS.md), and
 * routing by path keeps what one validator did: its route order, its 404 and 405, each path
 * validated against its own operation.
 */
import { createRequire } from 'node:module';
import express, { type NextFunction, type Request, type Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import request from 'supertest';
import { documentFor, openApiValidator, shareValidators, type ValidatorFactory } from '../../src/http/contract/openapi-validator';
import { loadSpec } from '../../src/spec';
import { auth, describeEachDatabase } from '../support/context';

const validatorPathToRegexp = () =>
  createRequire(require.resolve('express-openapi-validator'))('path-to-regexp') as { pathToRegexp: (route: string, ...rest: unknown[]) => unknown };

const ok = { '200': { description: 'ok' } };
const doc = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  paths: {
    '/things/{id}': {
      get: { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }], responses: ok },
    },
    '/things/mine': { get: { parameters: [{ $ref: '#/components/parameters/Limit' }], responses: ok } },
    '/things': {
      post: {
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
        responses: ok,
      },
    },
  },
  components: {
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
    parameters: { Limit: { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 10 } } },
    schemas: {
      Thing: {
        oneOf: [{ $ref: '#/components/schemas/Small' }, { $ref: '#/components/schemas/Big' }],
        discriminator: { propertyName: 'kind', mapping: { small: '#/components/schemas/Small', big: '#/components/schemas/Big' } },
      },
      Small: { type: 'object', required: ['kind'], properties: { kind: { const: 'small' } } },
      Big: { type: 'object', required: ['kind', 'size'], properties: { kind: { const: 'big' }, size: { $ref: '#/components/schemas/Size' } } },
      Size: { type: 'integer', minimum: 1 },
      Unused: { type: 'string' },
    },
  },
};

function app() {
  const a = express();
  a.use(express.json());
  a.use(openApiValidator(doc, { validateRequests: true, validateResponses: false, ignoreUndocumented: false }));
  a.use((req: Request, res: Response) => res.json({ operation: (req as Request & { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute }));
  a.use((err: { status?: number; name?: string }, _req: Request, res: Response, _next: NextFunction) => {
    res.status(err.status ?? 500).json({ name: err.name });
  });
  return a;
}

describe('the validator mounted per documented path', () => {
  it('validates each request against its own path, literal paths before parameters, as one validator did', async () => {
    const a = app();
    await request(a).get('/things/mine').expect(200, { operation: '/things/mine' });
    await request(a).get('/things/mine?limit=11').expect(400);
    await request(a).get('/things/7').expect(200, { operation: '/things/{id}' });
    await request(a).get('/things/seven').expect(400);
    await request(a).post('/things').send({ kind: 'small' }).expect(200, { operation: '/things' });
    await request(a).post('/things').send({ kind: 'medium' }).expect(400);
  });

  it('answers a path no operation documents with 404, and an undocumented method with 405', async () => {
    const a = app();
    await request(a).get('/nothing').expect(404, { name: 'Not Found' });
    await request(a).get('/things/7/more').expect(404, { name: 'Not Found' });
    await request(a).delete('/things/7').expect(405, { name: 'Method Not Allowed' });
  });

  it("accepts the whole document under the library's own OpenAPI check, which the app's per-path validators skip", async () => {
    const whole = express();
    // cast: as in openapi-validator.ts, the library types its document as openapi-types' OpenAPIV3.Document.
    whole.use(OpenApiValidator.middleware({ apiSpec: structuredClone(loadSpec().doc) as never, validateApiSpec: true, ignoreUndocumented: true }));
    whole.use((_req: Request, res: Response) => res.json({ checked: true }));
    whole.use((err: Error, _req: Request, res: Response, _next: NextFunction) => res.status(500).json({ message: err.message }));
    const res = await request(whole).get('/not-in-the-contract');
    expect(res.body).toEqual({ checked: true });
  });

  it('compiles the OpenAPI meta-schema only to check a document, once per version, never for a validator that skips the check', async () => {
    // The library's constructor compiled it for every validator, 30-180 ms each (src/http/contract/meta-schema.ts).
    // This file's copy of the library (the app's validators come from the test environment's, patched the same way).
    // cast: the module's one export, as its .d.ts declares it.
    const metaSchema = createRequire(require.resolve('express-openapi-validator'))('./framework/openapi/factory.schema') as {
      factorySchema: (v: string) => unknown;
    };
    const compiles = jest.spyOn(metaSchema, 'factorySchema');
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const validated = (spec: object, validateApiSpec: boolean) => {
      const a = express();
      a.use(OpenApiValidator.middleware({ apiSpec: spec as never, validateApiSpec }));
      a.use((_req: Request, res: Response) => res.json({ checked: true }));
      a.use((err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) =>
        res.status(err.status ?? 500).json({ message: err.message }),
      );
      return request(a).get('/things/1');
    };
    const broken = { ...structuredClone(doc), paths: { '/things/{id}': { get: { responses: { '200': {} } } } } };
    try {
      // Three validators without the document check: no compile, and a broken document goes unchecked, as the option says.
      for (let i = 0; i < 3; i++) expect((await validated(structuredClone(doc), false)).body).toEqual({ checked: true });
      expect((await validated(structuredClone(broken), false)).status).not.toBe(500);
      expect(compiles).not.toHaveBeenCalled();
      // With the check: a compile for the version (none if an earlier check in this process made
      // it), the library's own answers, and no compile for a second check.
      expect((await validated(structuredClone(doc), true)).body).toEqual({ checked: true });
      const afterFirst = compiles.mock.calls.length;
      expect(afterFirst).toBeLessThanOrEqual(1);
      expect((await validated(structuredClone(broken), true)).body.message).toMatch(/apiDoc was invalid/);
      expect(compiles).toHaveBeenCalledTimes(afterFirst);
    } finally {
      compiles.mockRestore();
      quiet.mockRestore();
    }
  });

  it("finds a path's validator again for another app on the same document and options, without building its document again", async () => {
    const asked: string[] = [];
    const built = new Map<string, ReturnType<ValidatorFactory>>();
    const counting: ValidatorFactory = (key, apiSpec, options) => {
      asked.push(Object.keys(apiSpec.paths ?? {}).join());
      if (!built.has(key)) built.set(key, OpenApiValidator.middleware({ ...options, apiSpec: apiSpec as never }));
      return built.get(key)!;
    };
    shareValidators(counting);
    try {
      // A document of its own: no other test of this file has asked for its validators.
      const own = structuredClone(doc);
      const appOn = (options: Parameters<typeof openApiValidator>[1]) => {
        const a = express();
        a.use(openApiValidator(own, options));
        a.use((_req: Request, res: Response) => res.json({ ok: true }));
        a.use((err: { status?: number }, _req: Request, res: Response, _next: NextFunction) => res.status(err.status ?? 500).json({}));
        return a;
      };
      const options = { validateRequests: true, validateResponses: false, ignoreUndocumented: false };
      await request(appOn(options)).get('/things/1').expect(200);
      await request(appOn({ ...options }))
        .get('/things/2')
        .expect(200);
      await request(appOn({ ...options }))
        .get('/things/x')
        .expect(400);
      expect(asked).toEqual(['/things/{id}']);
      // Other options are another validator.
      await request(appOn({ ...options, validateRequests: false }))
        .get('/things/x')
        .expect(200);
      expect(asked).toEqual(['/things/{id}', '/things/{id}']);
    } finally {
      const environment = (globalThis as { windsockValidators?: ValidatorFactory }).windsockValidators;
      if (environment) shareValidators(environment);
    }
  });

  it('gives each validator its path and only the components it reaches, by reference or discriminator mapping', () => {
    const one = documentFor(doc, '/things');
    expect(Object.keys(one.paths!)).toEqual(['/things']);
    expect(Object.keys(one.components!.schemas!).sort()).toEqual(['Big', 'Size', 'Small', 'Thing']);
    expect(one.components!.parameters).toBeUndefined();
    expect(one.components!.securitySchemes).toEqual(doc.components.securitySchemes);
    expect(Object.keys(documentFor(doc, '/things/mine').components!)).toEqual(['parameters', 'securitySchemes']);
    expect(one.components!.schemas!.Thing).not.toBe(doc.components.schemas.Thing);
  });
});

describeEachDatabase('route lookup of the validator in the app', (ctx) => {
  it("compiles at most the requested path's route per request, and still finds the right operation", async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipelines = `/v2/organizations/${org.slug}/pipelines`;
    const get = (path: string, status: number) => ctx().http().get(path).set(auth(token)).expect(status);
    // The first request to a path builds its validator.
    await get(pipelines, 200);
    await get(`${pipelines}/missing`, 404);
    const spy = jest.spyOn(validatorPathToRegexp(), 'pathToRegexp');
    try {
      await get(pipelines, 200);
      await get(`${pipelines}/missing`, 404);
      await get(`${pipelines}?per_page=0`, 400);
      // As published the validator compiles the one route each time; with the cache proposed
      // upstream it would compile none.
      expect(spy.mock.calls.length).toBeLessThanOrEqual(3);
      const requested = ['/v2/organizations/:org_slug/pipelines', '/v2/organizations/:org_slug/pipelines/:pipeline_slug'];
      for (const [route] of spy.mock.calls) expect(requested).toContain(route);
    } finally {
      spy.mockRestore();
    }
  });
});
