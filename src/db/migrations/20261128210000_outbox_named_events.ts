/**
 * Outbox events that are no state change: `event` names one (the webhook event it is) and
 * `detail` holds what its body adds that no row keeps (JSON). The first is
 * `job.promised_exit_status` (`buildkite-agent job promise-failure`): the job stays running, and
 * the body carries the promise's reason, which the docs say is not stored on the job. The
 * transitions the triggers record (20261126090000_outbox.ts) leave both null.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.string('event', 40);
    t.text('detail');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_events', (t) => {
    t.dropColumn('event');
    t.dropColumn('detail');
  });
}
