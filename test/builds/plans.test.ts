/**
 * Every build-list filter and the order are served by an index, on both stores: the plan of
 * each query never reads the builds table in full. (On Postgres seq scans are disabled for the
 * check, so the planner shows whether an index path exists at all rather than what it prefers
 * on a tiny table.) Unfiltered and branch/state lists are also ordered by their index (no sort).
 */
import type { Knex } from 'knex';
import type { BuildFilter } from '../../src/builds/model';
import { BuildRepository } from '../../src/builds/repository';
import { describeEachDatabase } from '../support/context';

const since = new Date('2020-01-01T00:00:00Z');

describeEachDatabase('build list query plans', (ctx) => {
  async function plan(q: Knex.QueryBuilder): Promise<string> {
    const db = ctx().services.db;
    const { sql, bindings } = q.toSQL();
    if (ctx().kind === 'sqlite') {
      const rows = await db.raw(`explain query plan ${sql}`, bindings as never);
      return (rows as { detail: string }[]).map((r) => r.detail).join('\n');
    }
    return db.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      const res = await trx.raw(`explain ${sql}`, bindings as never);
      return (res.rows as Record<string, string>[]).map((r) => r['QUERY PLAN']).join('\n');
    });
  }

  function fullScan(text: string): boolean {
    return ctx().kind === 'sqlite' ? /^SCAN b$/m.test(text) : /Seq Scan on builds/.test(text);
  }

  const filters: [string, Omit<BuildFilter, 'scope'>, boolean][] = [
    ['no filter', {}, true],
    ['branch', { branches: ['main'] }, true],
    ['branches', { branches: ['main', 'dev'] }, false],
    ['commit', { commits: ['a'.repeat(40)] }, false],
    ['state', { states: ['passed'] }, true],
    ['states', { states: ['passed', 'failed'] }, false],
    ['created_from', { createdFrom: since }, false],
    ['created_to', { createdTo: since }, false],
    ['finished_from', { finishedFrom: since }, false],
    ['creator', { creatorId: '00000000-0000-4000-8000-000000000000' }, false],
    ['meta_data', { metaData: { env: 'prod' } }, false],
  ];

  it.each(filters)('pipeline and organization lists use an index for %s', async (_name, filter, ordered) => {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set({ Authorization: `Bearer ${token}` })
      .send({ name: 'Plans', repository: 'git@github.com:a/b.git', configuration: 'steps:\n  - command: x\n' })
      .expect(201);
    const repo = new BuildRepository(ctx().services.db);
    for (const scope of [{ pipelineId: res.body.id }, { organizations: [{ id: org.id }] }] as BuildFilter['scope'][]) {
      const q = await repo.listQuery({ scope, ...filter }, 0, 30);
      const text = await plan(q!.query);
      expect({ scope, text, fullScan: fullScan(text) }).toMatchObject({ fullScan: false });
      if (ordered && ctx().kind === 'sqlite') expect({ scope, text }).not.toMatchObject({ text: expect.stringContaining('TEMP B-TREE') });
    }
  });

  it('the cross-organization list uses an index too', async () => {
    const repo = new BuildRepository(ctx().services.db);
    const a = await ctx().givenOrg();
    const b = await ctx().givenOrg();
    const q = await repo.listQuery({ scope: { organizations: [{ id: a.id }, { id: b.id }] } }, 0, 30);
    expect(fullScan(await plan(q!.query))).toBe(false);
  });
});
