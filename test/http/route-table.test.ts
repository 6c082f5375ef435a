/**
 * The route table of src/http/contract/route-table.ts on its own (no store): behind
 * `tagOperation` a request runs only the route of the spec path it names, with Express's
 * parameters (decoded, a malformed escape a 400, put back when the route is left), errors and
 * rejections passed on, HEAD as GET, and nothing for a path outside the spec; without
 * `tagOperation` every route is tried in order, as an Express router would.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { joinRouteTables, onlyUnder, routeTable } from '../../src/http/contract/route-table';
import { specPathIndex, tagOperation } from '../../src/http/contract/spec-paths';
import { auth, describeEachDatabase } from '../support/context';

const doc = {
  paths: {
    '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}': { get: { operationId: 'getPipeline' }, delete: { operationId: 'deletePipeline' } },
    '/v2/organizations/{org_slug}/teams/enable': { post: { operationId: 'enableTeams' } },
    '/v2/organizations/{org_slug}/teams/{team_id}': { get: { operationId: 'getTeam' } },
  },
};

/** An app whose table records which route ran with which parameters, then answers with what it saw. */
function app(tagged: boolean) {
  const ran: string[] = [];
  const table = routeTable();
  const record = (name: string) => (req: Request, _res: Response, next: NextFunction) => {
    ran.push(`${name} ${JSON.stringify(req.params)}`);
    next();
  };
  table.add('get', '/v2/organizations/:org_slug/pipelines/:pipeline_slug', record('getPipeline'), record('getPipeline again'));
  table.add('delete', '/v2/organizations/:org_slug/pipelines/:pipeline_slug', () => {
    throw Object.assign(new Error('thrown'), { status: 409 });
  });
  table.add('post', '/v2/organizations/:org/teams/enable', async () => {
    throw Object.assign(new Error('rejected'), { status: 418 });
  });
  table.add('get', '/v2/organizations/:org/teams/:team_id', record('getTeam'));
  const a = express();
  if (tagged) a.use(tagOperation(specPathIndex(doc)));
  a.use(table.handler);
  // After the table: the outer params are the app's again, whatever the route set.
  a.use((req, res) => {
    res.json({ ran, params: req.params });
  });
  a.use((err: { status?: number; message: string }, _req: Request, res: Response, _next: NextFunction) => {
    res.status(err.status ?? 500).json({ message: err.message });
  });
  return a;
}

describe('routeTable', () => {
  it("runs the one route of the request's spec path and method, with its parameters decoded, then puts them back", async () => {
    const res = await request(app(true)).get('/v2/organizations/acme/pipelines/my%20app').expect(200);
    expect(res.body).toEqual({
      ran: ['getPipeline {"org_slug":"acme","pipeline_slug":"my app"}', 'getPipeline again {"org_slug":"acme","pipeline_slug":"my app"}'],
      params: {},
    });
    // HEAD runs GET's route; a trailing slash matches as in Express.
    await request(app(true)).head('/v2/organizations/acme/pipelines/app/').expect(200);
  });

  it('passes a thrown error and a rejected promise on, and answers a malformed escape with a 400', async () => {
    expect((await request(app(true)).delete('/v2/organizations/acme/pipelines/app').expect(409)).body).toEqual({ message: 'thrown' });
    expect((await request(app(true)).post('/v2/organizations/acme/teams/enable').expect(418)).body).toEqual({ message: 'rejected' });
    expect((await request(app(true)).get('/v2/organizations/acme/pipelines/%E0%A4%A').expect(400)).body.message).toMatch(/Failed to decode param/);
  });

  it('runs nothing for a path outside the spec, or a method its path does not have (a literal segment wins over a parameter)', async () => {
    expect((await request(app(true)).get('/v2/organizations/acme/nothing').expect(200)).body.ran).toEqual([]);
    expect((await request(app(true)).put('/v2/organizations/acme/pipelines/app').expect(200)).body.ran).toEqual([]);
    // GET /teams/enable is the literal path's, which has no GET: not getTeam with team_id "enable".
    expect((await request(app(true)).get('/v2/organizations/acme/teams/enable').expect(200)).body.ran).toEqual([]);
    expect((await request(app(true)).get('/v2/organizations/acme/teams/t1').expect(200)).body.ran).toEqual(['getTeam {"org":"acme","team_id":"t1"}']);
  });

  it('without tagOperation, tries every route in order as Express does', async () => {
    expect((await request(app(false)).get('/v2/organizations/acme/pipelines/app').expect(200)).body.ran).toEqual([
      'getPipeline {"org_slug":"acme","pipeline_slug":"app"}',
      'getPipeline again {"org_slug":"acme","pipeline_slug":"app"}',
    ]);
    expect((await request(app(false)).get('/v2/organizations/acme/teams/enable').expect(200)).body.ran).toEqual(['getTeam {"org":"acme","team_id":"enable"}']);
  });
});

describe('joinRouteTables and onlyUnder', () => {
  /** Two areas' tables as the app mounts them: joined, or one after the other. */
  function areas(joined: boolean) {
    const ran: string[] = [];
    const record = (name: string) => (req: Request, _res: Response, next: NextFunction) => {
      ran.push(`${name} ${JSON.stringify(req.params)}`);
      next();
    };
    const pipelines = routeTable();
    pipelines.add('get', '/v2/organizations/:org_slug/pipelines/:pipeline_slug', record('pipelines'));
    const more = routeTable();
    more.add('get', '/v2/organizations/:org_slug/pipelines/:pipeline_slug', record('more'));
    more.add('delete', '/v2/organizations/:org_slug/pipelines/:pipeline_slug', () => {
      throw Object.assign(new Error('thrown'), { status: 409 });
    });
    more.add('get', '/v2/organizations/:org/teams/:team_id', record('teams'));
    const a = express();
    a.use(tagOperation(specPathIndex(doc)));
    if (joined) a.use(joinRouteTables([pipelines.handler, more.handler]));
    else a.use(pipelines.handler, more.handler);
    a.use((req, res) => {
      res.json({ ran, params: req.params });
    });
    a.use((err: { status?: number; message: string }, _req: Request, res: Response, _next: NextFunction) => {
      res.status(err.status ?? 500).json({ message: err.message });
    });
    return a;
  }

  it('joined, the tables answer exactly as mounted one after the other', async () => {
    for (const path of ['/v2/organizations/acme/pipelines/app', '/v2/organizations/acme/teams/t1', '/v2/organizations/acme/nothing']) {
      const [one, each] = await Promise.all([request(areas(true)).get(path), request(areas(false)).get(path)]);
      expect([one.status, one.body]).toEqual([each.status, each.body]);
    }
    expect((await request(areas(true)).get('/v2/organizations/acme/pipelines/app').expect(200)).body.ran).toEqual([
      'pipelines {"org_slug":"acme","pipeline_slug":"app"}',
      'more {"org_slug":"acme","pipeline_slug":"app"}',
    ]);
    expect((await request(areas(true)).delete('/v2/organizations/acme/pipelines/app').expect(409)).body).toEqual({ message: 'thrown' });
    expect(() => joinRouteTables([(_req, _res, next) => next()])).toThrow(/no route table/);
  });

  it('onlyUnder runs a router for its prefix only, whatever the case', async () => {
    const inner = express.Router();
    inner.get('/docs/:page', (req, res) => {
      res.json({ page: req.params.page });
    });
    const a = express();
    a.use(onlyUnder('/docs', inner));
    a.use((_req, res) => {
      res.status(404).json({ message: 'past' });
    });
    expect((await request(a).get('/docs/intro').expect(200)).body).toEqual({ page: 'intro' });
    expect((await request(a).get('/DOCS/intro').expect(200)).body).toEqual({ page: 'intro' });
    await request(a).get('/docsy/intro').expect(404);
    await request(a).get('/v2/docs/intro').expect(404);
  });
});

describeEachDatabase('the route table in the service', (ctx) => {
  it('answers a path parameter that is not UTF-8 with a documented 404, as for any name that is not there (found by the fuzzer)', async () => {
    const { token } = await ctx().givenAdmin();
    for (const path of ['/v2/organizations/..%2F..%ED%A0%80/pipeline-settings', '/v2/organizations/%ED%BF%BF%E2%80%A8/pipelines']) {
      expect((await ctx().http().get(path).set(auth(token)).expect(404)).body).toEqual({ message: 'Not Found' });
    }
  });
});
