/**
 * Knex's table map (`knex/types/tables`): a query on a table by name (`db('builds')`) returns the
 * row type generated from the migrations (src/db/tables.ts), and inserts and updates are checked
 * against it.
 */
import type { TableRows } from './tables';

declare module 'knex/types/tables' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Tables extends TableRows {}
}
