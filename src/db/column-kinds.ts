/**
 * The kinds of column the migrations create, and how each reads back from the two drivers:
 * better-sqlite3 gives timestamps as epoch milliseconds and booleans as 0/1, pg gives Date and
 * boolean, and pg gives a bigint as a string (it may not fit a double). `src/db/values.ts` turns
 * these into domain values (`toDate`, `toBool`, `toCount`).
 *
 * scripts/generate-tables.mjs names each column's kind from SQLite's declared type;
 * test/db/table-types.test.ts checks it against Postgres's `information_schema` too.
 */
export type ColumnKind = 'string' | 'integer' | 'bigint' | 'float' | 'boolean' | 'timestamp' | 'binary';

export type DbTimestamp = Date | number;
export type DbBoolean = boolean | number;
export type DbBigInt = number | string;

export const TS_TYPE_OF_KIND: Record<ColumnKind, string> = {
  string: 'string',
  integer: 'number',
  bigint: 'DbBigInt',
  float: 'number',
  boolean: 'DbBoolean',
  timestamp: 'DbTimestamp',
  binary: 'Buffer',
};

/**
 * The kind of a column from the type SQLite declares for it (what Knex's schema builder wrote).
 * An integer primary key on its own is SQLite's rowid, which Knex writes for `increments` and `bigIncrements`
 * alike: it counts as a bigint (Postgres's bigserial, read as a string there).
 */
export function sqliteColumnKind(declared: string, table: string, column: string, rowid = false): ColumnKind {
  const t = declared.toLowerCase();
  if (rowid && t === 'integer') return 'bigint';
  if (/^(var)?char\(\d+\)$/.test(t) || t === 'text' || t === 'json' || t === 'jsonb' || t === 'uuid') return 'string';
  if (t === 'integer' || t === 'int') return 'integer';
  if (t === 'bigint') return 'bigint';
  if (t === 'float' || t === 'double' || t === 'real' || /^decimal/.test(t)) return 'float';
  if (t === 'boolean') return 'boolean';
  if (t === 'datetime' || t === 'timestamp' || t === 'date') return 'timestamp';
  if (t === 'blob') return 'binary';
  throw new Error(`${table}.${column}: no column kind for SQLite's declared type "${declared}"`);
}

/** The kind of a column from Postgres's `information_schema.columns.data_type`. */
export function postgresColumnKind(dataType: string, table: string, column: string): ColumnKind {
  switch (dataType) {
    case 'uuid':
    case 'text':
    case 'character varying':
    case 'character':
    case 'json':
    case 'jsonb':
      return 'string';
    case 'integer':
    case 'smallint':
      return 'integer';
    case 'bigint':
      return 'bigint';
    case 'real':
    case 'double precision':
    case 'numeric':
      return 'float';
    case 'boolean':
      return 'boolean';
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return 'timestamp';
    case 'bytea':
      return 'binary';
    default:
      throw new Error(`${table}.${column}: no column kind for Postgres's data type "${dataType}"`);
  }
}
