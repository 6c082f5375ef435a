/**
 * Sign-in sessions of the web interface. The cookie holds a random session id; a row keeps only
 * its SHA-256 and the API token it stands for, encrypted with a key derived from the session id:
 * neither the database nor the cookie alone yields the token.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('web_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.text('sealed_token').notNullable();
    t.bigInteger('created_at_ms').notNullable();
    t.bigInteger('expires_at_ms').notNullable().index();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('web_sessions');
}
