import * as jobUnblock from '../../src/db/migrations/20261123150100_job_unblock';
import * as jobUnblockedIndex from '../../src/db/migrations/20261129160000_job_unblocked_index';
import { describeEachDatabase } from '../support/context';

describeEachDatabase('the job unblock migration', (ctx) => {
  it('adds the columns where missing and leaves them where a database has them already', async () => {
    const db = ctx().services.db;
    expect(await db.schema.hasColumn('jobs', 'unblocked_by')).toBe(true);
    // Migrated while the agents migration added the columns itself: nothing to do, no error.
    await jobUnblock.up(db);
    // Down as a rollback runs it: after the later migration that indexes its column.
    await jobUnblockedIndex.down(db);
    await jobUnblock.down(db);
    expect(await db.schema.hasColumn('jobs', 'unblocked_at')).toBe(false);
    await jobUnblock.up(db);
    await jobUnblockedIndex.up(db);
    expect(await db.schema.hasColumn('jobs', 'unblocked_by')).toBe(true);
    expect(await db.schema.hasColumn('jobs', 'unblocked_at')).toBe(true);
  });
});
