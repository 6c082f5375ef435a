/**
 * src/db/compiled.ts: a query compiled once answers what the same query built by Knex answers,
 * on both stores, with each call's own values, in a transaction too; a query it cannot run
 * faithfully is refused when compiled.
 */
import type { Knex } from 'knex';
import { compiledQuery, readTogether } from '../../src/db/compiled';
import { isPostgres } from '../../src/db/knex';
import { toDate } from '../../src/db/values';
import { describeEachDatabase } from '../support/context';

describeEachDatabase('queries compiled once', (ctx) => {
  const byName = (db: Knex, name: string) => db('organizations').where({ name }).whereNot('slug', 'never').orderBy('slug').select('id', 'slug', 'name');
  const compiled = compiledQuery((db, param: (name: 'name') => string) => byName(db, param('name')));
  const first = compiledQuery((db, param: (name: 'slug') => string) => db('organizations').where('slug', param('slug')).first('id', 'slug'));

  it('answers the rows Knex answers for the same query, for each call its own values', async () => {
    const db = ctx().services.db;
    const a = await ctx().givenAdmin();
    const b = await ctx().givenAdmin();
    for (const org of [a.org, b.org]) {
      expect(await compiled(db, { name: org.name })).toEqual(await byName(db, org.name));
      expect(await first(db, { slug: org.slug })).toEqual(await db('organizations').where('slug', org.slug).first('id', 'slug'));
    }
    expect(await compiled(db, { name: 'no such organization' })).toEqual([]);
    expect(await first(db, { slug: 'no-such-organization' })).toBeUndefined();
    // A value that looks like SQL is only ever a value.
    expect(await first(db, { slug: "' or 1=1 --" })).toBeUndefined();
  });

  it('runs in a transaction, seeing its uncommitted rows', async () => {
    const db = ctx().services.db;
    const { org } = await ctx().givenAdmin();
    await db
      .transaction(async (trx) => {
        await trx('organizations')
          .where({ id: org.id })
          .update({ slug: `${org.slug}-renamed` });
        expect(await first(trx, { slug: `${org.slug}-renamed` })).toEqual({ id: org.id, slug: `${org.slug}-renamed` });
        await trx.rollback();
      })
      .catch(() => undefined);
    expect(await first(db, { slug: `${org.slug}-renamed` })).toBeUndefined();
  });

  it('reads rows as JSON on Postgres (`jsonRows`): the same values once read, timestamps as ISO strings, order kept', async () => {
    const db = ctx().services.db;
    const a = await ctx().givenAdmin();
    const b = await ctx().givenAdmin();
    const columns = (d: Knex) =>
      d('organizations').whereIn('slug', [a.org.slug, b.org.slug]).orderBy('slug', 'desc').select('id', 'slug', 'created_at', 'teams_enabled');
    const asColumns = compiledQuery((d, param: (name: 'never') => string) => columns(d).whereNot('slug', param('never')));
    const asJson = compiledQuery((d, param: (name: 'never') => string) => columns(d).whereNot('slug', param('never')), { jsonRows: true });
    const [plain, json] = [await asColumns(db, { never: '-' }), await asJson(db, { never: '-' })];
    expect(json.map((r) => r.slug)).toEqual([a.org.slug, b.org.slug].sort().reverse());
    expect(json.map((r) => ({ ...r, created_at: toDate(r.created_at).getTime() }))).toEqual(
      plain.map((r) => ({ ...r, created_at: toDate(r.created_at).getTime() })),
    );
    if (isPostgres(db)) expect(json.map((r) => typeof r.created_at)).toEqual(['string', 'string']);
    else expect(json).toEqual(plain);
    const firstAsJson = compiledQuery((d, param: (name: 'slug') => string) => d('organizations').where('slug', param('slug')).first('id', 'slug'), {
      jsonRows: true,
    });
    expect(await firstAsJson(db, { slug: a.org.slug })).toEqual({ id: a.org.id, slug: a.org.slug });
    expect(await firstAsJson(db, { slug: 'no-such-organization' })).toBeUndefined();
  });

  it('reads two one-row queries together (one statement on Postgres): each row as it reads alone, undefined where one finds none', async () => {
    const db = ctx().services.db;
    const a = await ctx().givenAdmin();
    const b = await ctx().givenAdmin();
    const org = compiledQuery((d, param: (name: 'slug') => string) => d('organizations').where('slug', param('slug')).first('id', 'slug', 'created_at'), {
      jsonRows: true,
    });
    const user = compiledQuery((d, param: (name: 'id') => string) => d('users').where('id', param('id')).first('id', 'email'));
    const [o, u] = await readTogether(db, [org, { slug: a.org.slug }], [user, { id: b.user.id }]);
    expect({ ...o, created_at: toDate(o!.created_at).getTime() }).toEqual({ id: a.org.id, slug: a.org.slug, created_at: a.org.createdAt.getTime() });
    expect(u).toEqual({ id: b.user.id, email: b.user.email });
    expect(await readTogether(db, [org, { slug: 'no-such-organization' }], [user, { id: b.user.id }])).toEqual([
      undefined,
      { id: b.user.id, email: b.user.email },
    ]);
    expect(await readTogether(db, [org, { slug: b.org.slug }], [user, { id: '00000000-0000-4000-8000-000000000000' }])).toEqual([
      expect.objectContaining({ id: b.org.id }),
      undefined,
    ]);
    // A read of several rows cannot run inside another statement.
    const many = compiledQuery((d, param: (name: 'slug') => string) => d('organizations').whereNot('slug', param('slug')).select('id'));
    expect(() => many.statement(db, { slug: '-' })).toThrow('only a one-row read');
  });

  it('refuses a write, and a parameter the query does not bind, when compiling', async () => {
    const db = ctx().services.db;
    const write = compiledQuery((d, param: (name: 'slug') => string) => d('organizations').where('slug', param('slug')).update({ name: 'x' }));
    await expect(write(db, { slug: 'a' })).rejects.toThrow('a update query cannot be compiled once');
    const unbound = compiledQuery((d, param: (name: 'slug') => string) => (param('slug'), d('organizations').select('id')));
    await expect(unbound(db, { slug: 'a' })).rejects.toThrow('the parameter slug is not a binding of the compiled SQL');
  });
});
