/**
 * A test suite's `oidc_policy` (the docs' suites page; test_collection/oidc.md): which OIDC
 * tokens of `buildkite-agent oidc request-token` may upload test results to the suite instead
 * of its API token. It was accepted and dropped; now kept as its statements (JSON), null when
 * the suite has none.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('suites', (t) => {
    t.text('oidc_policy').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('suites', (t) => {
    t.dropColumn('oidc_policy');
  });
}
