/** Removes the run's migrated templates (test/support/global-setup.ts). */
import { removeTemplates } from './templates';

export default function globalTeardown(): void {
  removeTemplates();
}
