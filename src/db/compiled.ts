/**
 * Queries compiled once per store instead of on every call. Knex builds a query and compiles its
 * SQL anew each time it runs: for the reads behind every pipeline-scoped request (the pipeline by
 * its slug, a build by its number) that was about a tenth of a GET build's CPU (BENCHMARKS.md).
 * A compiled query is built once per database kind with named parameters standing for its
 * values; each call runs that SQL with the call's values, through Knex's pool and the same
 * driver (so the prepared-statement cache, the row shapes and the type parsers are the ones a
 * built query gets).
 *
 * For reads of a fixed shape only: `select` or `first`, and no list whose length varies
 * between calls (on Postgres a list is one array parameter, `= any(?)`, and fits).
 *
 * `jsonRows`: on Postgres, each row comes as one JSON value (`row_to_json`) instead of its
 * columns. node-pg's cost per query grows with the columns it is sent: it reads each column's
 * description and builds a parser and an empty row of them all (`Result.addFields`) for every
 * query, prepared or not. For the pipeline by its slug (45 columns with its creator, template
 * and counts) one JSON column took the query's CPU in the service's process from about 140-180
 * to about 100 µs. Postgres pays for it per row (about 10 µs a row to write the JSON), so this is
 * for the one-row reads behind every request, not for pages of rows (BENCHMARKS.md, "One-row
 * reads as JSON on Postgres"). The row's timestamps are then ISO strings (`JsonRow`), which the
 * row readers take as they take SQLite's epoch numbers; a bigint is a number. Not for rows with
 * a binary column (JSON has no bytes).
 */
import type { Knex } from 'knex';
import { isPostgres } from './knex';
import { rawRows, type StoredRow, type StoredRows } from './row-types';

/** A query as Knex builds it: compilable, and a promise of its rows (or its first row). */
type Compilable<T> = PromiseLike<T> & { toSQL(): Knex.Sql };

interface Plan<P extends string> {
  sql: string;
  /** Each binding in order: a named parameter, or a value the builder fixed (a `limit`, a state). */
  slots: ({ param: P } | { value: Knex.Value })[];
  /** The SQL with its columns, as `build` made it (`sql` is it wrapped as JSON with `jsonRows` on Postgres). */
  columnsSql: string;
  first: boolean;
  /** Each row is one JSON column, `r` (Postgres with `jsonRows`). */
  json: boolean;
}

/** What stands for a named parameter while the query is compiled; only the compiled bindings are ever compared with it, never a call's values. */
const MARK = '\u0000windsock-parameter:';

/** A compiled read: called, it runs; `statement` gives its SQL to run inside another (`readTogether`). */
export interface CompiledQuery<P extends string, T> {
  (db: Knex, values: Record<P, Knex.Value>): Promise<T>;
  /** The one-row read's SQL for `db`'s dialect (its columns, never as JSON) and its bindings for `values`. */
  statement(db: Knex, values: Record<P, Knex.Value>): { sql: string; bindings: Knex.Value[] };
}

/**
 * `build` makes the query with `param(name)` wherever a value goes; the answer runs it on a Knex
 * instance (or a transaction) with `values`, resolving as the built query would.
 */
export function compiledQuery<P extends string, T>(
  build: (db: Knex, param: (name: P) => string) => Compilable<T>,
  options?: { jsonRows?: false },
): CompiledQuery<P, T>;
/** As above, each row read as one JSON value on Postgres: its timestamps may be ISO strings (`StoredRows`). */
export function compiledQuery<P extends string, T>(
  build: (db: Knex, param: (name: P) => string) => Compilable<T>,
  options: { jsonRows: true },
): CompiledQuery<P, StoredRows<T>>;
export function compiledQuery<P extends string, T>(
  build: (db: Knex, param: (name: P) => string) => Compilable<T>,
  options: { jsonRows?: boolean } = {},
): CompiledQuery<P, T | StoredRows<T>> {
  const plans = new Map<string, Plan<P>>();
  const compile = (db: Knex): Plan<P> => {
    const marks = new Map<string, P>();
    const sql = build(db, (name) => {
      marks.set(MARK + name, name);
      return MARK + name;
    }).toSQL();
    if (sql.method !== 'select' && sql.method !== 'first') throw new Error(`compiledQuery: a ${sql.method} query cannot be compiled once`);
    const slots = sql.bindings.map((b) => {
      const param = typeof b === 'string' ? marks.get(b) : undefined;
      return param === undefined ? { value: b } : { param };
    });
    for (const [mark, name] of marks)
      if (!sql.bindings.includes(mark)) throw new Error(`compiledQuery: the parameter ${name} is not a binding of the compiled SQL`);
    const json = options.jsonRows === true && isPostgres(db);
    return { sql: json ? asJsonRows(sql.sql) : sql.sql, columnsSql: sql.sql, slots, first: sql.method === 'first', json };
  };
  const planFor = (db: Knex): Plan<P> => {
    const client: Knex.Client = db.client;
    let plan = plans.get(client.dialect);
    if (!plan) plans.set(client.dialect, (plan = compile(db)));
    return plan;
  };
  const bindingsOf = (plan: Plan<P>, values: Record<P, Knex.Value>) => plan.slots.map((s) => ('param' in s ? values[s.param] : s.value));
  const run = async (db: Knex, values: Record<P, Knex.Value>) => {
    const plan = planFor(db);
    const read = rawRows<unknown>(await db.raw(plan.sql, bindingsOf(plan, values)));
    const rows = plan.json ? read.map((row) => columnOf(row, 'r')) : read;
    // cast: the rows of the very query `build` typed as T (its rows, or its first row), run as raw SQL.
    return (plan.first ? rows[0] : rows) as T;
  };
  return Object.assign(run, {
    statement(db: Knex, values: Record<P, Knex.Value>) {
      const plan = planFor(db);
      if (!plan.first) throw new Error('compiledQuery: only a one-row read (`first`) runs inside another statement');
      return { sql: plan.columnsSql, bindings: bindingsOf(plan, values) };
    },
  });
}

/**
 * Two one-row reads in one statement: on Postgres each row comes as one JSON value (as with
 * `jsonRows`) in a single round trip, which for a request that needs both (a pipeline by its
 * slug and a build of it) is one query's cost less in the service's process (BENCHMARKS.md,
 * "One round trip for a GET build on Postgres"). Elsewhere (SQLite, where a statement costs no
 * round trip) the two run one after the other. Either row is undefined when its read finds none.
 */
export async function readTogether<PA extends string, A, PB extends string, B>(
  db: Knex,
  [a, aValues]: [CompiledQuery<PA, A | undefined>, Record<PA, Knex.Value>],
  [b, bValues]: [CompiledQuery<PB, B | undefined>, Record<PB, Knex.Value>],
): Promise<[StoredRow<A> | undefined, StoredRow<B> | undefined]> {
  if (!isPostgres(db)) return [await a(db, aValues), await b(db, bValues)];
  const [x, y] = [a.statement(db, aValues), b.statement(db, bValues)];
  const [row] = rawRows<unknown>(
    await db.raw(`select (select row_to_json(q) from (${x.sql}) as q) as a, (select row_to_json(q) from (${y.sql}) as q) as b`, [...x.bindings, ...y.bindings]),
  );
  // cast: each column is the JSON of the very row `a` or `b` reads (StoredRow), or null when it found none.
  return [(columnOf(row, 'a') ?? undefined) as StoredRow<A> | undefined, (columnOf(row, 'b') ?? undefined) as StoredRow<B> | undefined];
}

/** `sql` with each of its rows as one JSON column, `r`. */
const asJsonRows = (sql: string) => `select row_to_json(q) as r from (${sql}) as q`;

/** The JSON a row's column `key` holds (`row_to_json(q) as r`, or readTogether's `a` and `b`; node-pg parses a json column). */
function columnOf(row: unknown, key: string): unknown {
  if (typeof row === 'object' && row !== null && key in row) return Reflect.get(row, key);
  throw new TypeError(`compiledQuery: a JSON row without its column ${key}`);
}
