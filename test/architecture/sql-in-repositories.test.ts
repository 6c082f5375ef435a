/**
 * SQL only in repositories and src/db/ (docs/architecture.md): the lint rule
 * (eslint.config.mjs, `sqlInRepositories`, with `sqlOnlyInRepositories` for the knex import)
 * refuses a query built on a Knex handle anywhere else under src/, and lets repositories and
 * src/db/ build theirs. No database, no network.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const SQL_RULES = ['windsock/sql-in-repositories', '@typescript-eslint/no-restricted-imports'];

/**
 * The SQL rules' messages for each `[code, file]`, as if the code were that file: ESLint's API in
 * a child node process (jest's module system cannot load the config, an ES module), once for all.
 */
function lintAll(cases: [string, string][]): { ruleId: string; message: string }[][] {
  const script = `
    const { ESLint } = require('eslint');
    const path = require('node:path');
    const [cases, rules] = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = [];
      for (const [code, file] of cases) {
        const [result] = await eslint.lintText(code, { filePath: path.join(process.cwd(), file) });
        out.push(result.messages.filter((m) => rules.includes(m.ruleId) || m.fatal).map((m) => ({ ruleId: m.ruleId, message: m.message })));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify([cases, SQL_RULES])], { cwd: root, encoding: 'utf8' })) as {
    ruleId: string;
    message: string;
  }[][];
}

const HEADER = "import type { Knex } from 'knex';\n";

/** Ways a query is built on a handle, each a whole module. */
const QUERIES: [string, string][] = [
  ['db(table) on a handle handed in', `${HEADER}export async function f(db: Knex) { return db('builds').where({ id: 'x' }); }`],
  [
    'this.db(table) in a class',
    `${HEADER}export class S { constructor(private readonly db: Knex) {} async f() { return this.db('builds').where({ state: 'running' }).first(); } }`,
  ],
  [
    'trx(table) in a transaction',
    `${HEADER}export async function f(db: Knex) { await db.transaction(async (trx) => { await trx('jobs').update({ state: 'x' }); }); }`,
  ],
  ['a raw query', `${HEADER}export async function f(trx: Knex.Transaction) { await trx.raw('select 1'); }`],
  ['the schema builder', `${HEADER}export async function f(s: { db: Knex }) { return s.db.schema.hasTable('builds'); }`],
  ['knex.fn', `${HEADER}export function f(knex: Knex) { return knex.fn.now(); }`],
  ['the knex value imported', "import knex from 'knex';\nexport const db = knex({ client: 'pg' });"],
  ['knex required', "const knex = require('knex');\nexport const k = knex;"],
];

/** What a service does with a handle and may: transactions, and the type. */
const NOT_QUERIES = `${HEADER}export class S {
  constructor(private readonly db: Knex, private readonly repo: { withTransaction(trx: Knex.Transaction): unknown }) {}
  async f() { return this.db.transaction(async (trx) => this.repo.withTransaction(trx)); }
  async g() { await this.db.destroy(); }
}`;

const SERVICE = 'src/builds/example-service.ts';

describe('SQL lives in repositories only', () => {
  let results: { ruleId: string; message: string }[][];
  beforeAll(() => {
    results = lintAll([
      ...QUERIES.map(([, code]): [string, string] => [code, SERVICE]),
      [QUERIES[0]![1], 'src/builds/routes.ts'],
      [QUERIES[1]![1], 'src/metrics/registry.ts'],
      [NOT_QUERIES, SERVICE],
      ...[QUERIES[0]!, QUERIES[1]!, QUERIES[2]!, QUERIES[3]!, QUERIES[4]!].flatMap(([, code]): [string, string][] => [
        [code, 'src/builds/repository.ts'],
        [code, 'src/builds/jobs/log-repository.ts'],
        [code, 'src/db/example.ts'],
      ]),
      [QUERIES[6]![1], 'src/db/migrations/20261127111000_example.ts'],
    ]);
  }, 120_000);

  it.each(QUERIES.map(([name], i) => [name, i] as const))('refuses %s in a service', (_name, i) => {
    expect(results[i]!.length).toBeGreaterThan(0);
    expect(results[i]!.every((m) => SQL_RULES.includes(m.ruleId))).toBe(true);
    expect(results[i]!.map((m) => m.message).join('\n')).toMatch(/SQL belongs in a repository/);
  });

  it('refuses a query in routes and in any other module (the metrics registry)', () => {
    expect(results[QUERIES.length]!.map((m) => m.ruleId)).toContain('windsock/sql-in-repositories');
    expect(results[QUERIES.length + 1]!.map((m) => m.ruleId)).toContain('windsock/sql-in-repositories');
  });

  it('lets a service open transactions on a handle and import the Knex type', () => {
    expect(results[QUERIES.length + 2]).toEqual([]);
  });

  it('lets repositories (repository.ts, <name>-repository.ts), src/db/ and migrations query', () => {
    const allowed = results.slice(QUERIES.length + 3);
    expect(allowed).toHaveLength(5 * 3 + 1);
    expect(allowed).toEqual(allowed.map(() => []));
  });
});
