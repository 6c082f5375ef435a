import * as testRunWindows from '../../src/db/migrations/20261125160000_test_run_windows';
import { describeEachDatabase } from '../support/context';

const NAMES = ['test_runs_run_key_index', 'test_runs_suite_id_updated_at_index', 'tests_suite_id_created_at_index'];

describeEachDatabase('the test run windows migration', (ctx) => {
  /** The indexes of test_runs and tests this migration makes. */
  const indexes = async (): Promise<string[]> => {
    const db = ctx().services.db;
    const rows: { name: string }[] =
      ctx().kind === 'postgres'
        ? (await db.raw(`select indexname as name from pg_indexes where tablename in ('test_runs', 'tests') and schemaname = current_schema()`)).rows
        : await db.raw(`select name from sqlite_master where type = 'index' and tbl_name in ('test_runs', 'tests')`);
    return rows
      .map((r) => r.name)
      .filter((n) => NAMES.includes(n))
      .sort();
  };

  it('goes down and up again on a migrated store', async () => {
    expect(await indexes()).toEqual(NAMES);
    await testRunWindows.down(ctx().services.db);
    expect(await indexes()).toEqual([]);
    await testRunWindows.up(ctx().services.db);
    expect(await indexes()).toEqual(NAMES);
  });
});
