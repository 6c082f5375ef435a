/**
 * A pipeline's webhook secret (what provider deliveries are signed with: GitHub and Bitbucket
 * `X-Hub-Signature(-256)`, GitLab `X-Gitlab-Token`) can be rotated. The secret is still derived
 * from the server key, never stored: from the pipeline's id and this generation, which a rotation
 * moves on by one. Generation 0 derives exactly the secret every pipeline had before, so
 * deliveries already configured keep working.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.integer('webhook_secret_generation').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropColumn('webhook_secret_generation');
  });
}
