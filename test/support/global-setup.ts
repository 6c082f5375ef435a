/**
 * Decides once which stores the suites run on, and migrates a database of each once for the
 * whole run (test/support/templates.ts): every test context starts from a copy. Postgres is
 * mandatory when CI=true: an unreachable server fails the run instead of silently skipping
 * half of the suite.
 */
import knexFactory from 'knex';
import type { DatabaseKind } from '../../src/db/knex';
import { buildTemplates } from './templates';

export default async function globalSetup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  if (!process.env.TEST_DATABASES) {
    process.env.TEST_DATABASE_URL = url;
    const db = knexFactory({ client: 'pg', connection: { connectionString: url, connectionTimeoutMillis: 3000 }, pool: { min: 0, max: 1 } });
    try {
      await db.raw('select 1');
      process.env.TEST_DATABASES = 'sqlite,postgres';
    } catch (err) {
      if (process.env.CI === 'true') {
        throw new Error(`CI=true needs Postgres at ${url} and it is unreachable: ${(err as Error).message}`);
      }
      process.stderr.write(`\n!! Postgres at ${url} is unreachable: running the suites on SQLite only (set CI=true to make this fatal)\n\n`);
      process.env.TEST_DATABASES = 'sqlite';
    } finally {
      await db.destroy();
    }
  }
  const kinds = process.env.TEST_DATABASES.split(',').map((s) => s.trim()) as DatabaseKind[];
  await buildTemplates(kinds, url);
}
