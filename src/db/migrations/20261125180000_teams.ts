/**
 * Teams as the Teams API shows and manages them: a team's description, privacy (`visible` or
 * `secret`), whether new organization members join it (`is_default_team`), the role its new
 * members get (`default_member_role`), whether its members may create pipelines, and who made
 * it; a member's role in a team (`member` or `maintainer`); a suite grant's access level
 * (`read` or `edit`, edit including read); an organization member's SSO mode; and when each
 * association was made. Rows already there get the values that keep today's behaviour: grants
 * to suites are `edit` (members could change them), members are `member`, teams are visible,
 * and each association's time is its team's.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.AlterTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

  await knex.schema.alterTable('teams', (t) => {
    t.string('description', 1000);
    t.string('privacy', 20).notNullable().defaultTo('visible');
    t.boolean('is_default_team').notNullable().defaultTo(false);
    t.string('default_member_role', 20).notNullable().defaultTo('member');
    t.boolean('members_can_create_pipelines').notNullable().defaultTo(true);
    t.uuid('created_by_id');
  });
  await knex.schema.alterTable('team_members', (t) => {
    t.string('role', 20).notNullable().defaultTo('member');
    ts(t, 'created_at');
  });
  await knex.schema.alterTable('pipeline_teams', (t) => {
    ts(t, 'created_at');
  });
  await knex.schema.alterTable('suite_teams', (t) => {
    t.string('access_level', 20).notNullable().defaultTo('edit');
    ts(t, 'created_at');
  });
  await knex.schema.alterTable('organization_members', (t) => {
    t.string('sso_mode', 20).notNullable().defaultTo('optional');
  });
  for (const table of ['team_members', 'pipeline_teams', 'suite_teams']) {
    await knex(table)
      .whereNull('created_at')
      .update({
        created_at: knex('teams')
          .select('created_at')
          .where('teams.id', knex.ref(`${table}.team_id`)),
      });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organization_members', (t) => t.dropColumn('sso_mode'));
  await knex.schema.alterTable('suite_teams', (t) => {
    t.dropColumn('access_level');
    t.dropColumn('created_at');
  });
  await knex.schema.alterTable('pipeline_teams', (t) => t.dropColumn('created_at'));
  await knex.schema.alterTable('team_members', (t) => {
    t.dropColumn('role');
    t.dropColumn('created_at');
  });
  await knex.schema.alterTable('teams', (t) => {
    for (const c of ['description', 'privacy', 'is_default_team', 'default_member_role', 'members_can_create_pipelines', 'created_by_id']) t.dropColumn(c);
  });
}
