import * as testRunWindows from '../../src/db/migrations/20261125160000_test_run_windows';
import { describeEachDatabase } from '../support/context';

describeEachDatabase('the test run windows migration', (ctx) => {
  it('goes down and up again on a migrated store', async () => {
    const db = ctx().services.db;
    await testRunWindows.down(db);
    await testRunWindows.up(db);
    // Both indexes exist again: creating either a second time fails.
    await expect(db.schema.alterTable('test_runs', (t) => t.index(['run_key'], 'test_runs_run_key_index'))).rejects.toThrow();
    await expect(db.schema.alterTable('test_runs', (t) => t.index(['suite_id', 'updated_at'], 'test_runs_suite_id_updated_at_index'))).rejects.toThrow();
  });
});
