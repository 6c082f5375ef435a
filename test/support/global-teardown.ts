/** Removes the run's migrated templates and any database of the run left behind (test/support/global-setup.ts). */
import { removeTemplates } from './templates';

export default async function globalTeardown(): Promise<void> {
  await removeTemplates(process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test');
}
