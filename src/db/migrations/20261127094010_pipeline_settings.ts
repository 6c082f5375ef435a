/**
 * An organization's pipeline settings (issue 30): defaults for new pipelines (branch, cluster,
 * step timeouts), the expiry of scheduled jobs, and the switches the real API turns on and off
 * (public pipeline creation, hosted agents' terminal access, advanced queue metrics), each with
 * who turned it on and when.
 */
import type { Knex } from 'knex';

const SWITCHES = ['hosted_agents_ssh', 'public_pipelines', 'advanced_queue_metrics'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organizations', (t) => {
    t.string('default_branch', 255).nullable();
    // No foreign keys: SQLite would rebuild `organizations` to add one. A deleted cluster or user is read as none.
    t.uuid('default_cluster_id').nullable();
    t.integer('default_timeout_in_minutes').nullable();
    t.integer('maximum_timeout_in_minutes').nullable();
    t.integer('scheduled_job_expiry_in_minutes').nullable();
    for (const s of SWITCHES) {
      t.timestamp(`${s}_enabled_at`, { useTz: true, precision: 3 }).nullable();
      t.uuid(`${s}_enabled_by_id`).nullable();
    }
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organizations', (t) => {
    t.dropColumn('default_branch');
    t.dropColumn('default_cluster_id');
    t.dropColumn('default_timeout_in_minutes');
    t.dropColumn('maximum_timeout_in_minutes');
    t.dropColumn('scheduled_job_expiry_in_minutes');
    for (const s of SWITCHES) {
      t.dropColumn(`${s}_enabled_at`);
      t.dropColumn(`${s}_enabled_by_id`);
    }
  });
}
