/** Organizations, memberships and teams: rows in, domain objects out. */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Organization, Role, User } from '../core/identity';
import { userFromRow } from '../user/rows';
import type { ClustersRow, OrganizationsRow, TeamMembersRow, TeamsRow, UsersRow } from '../db/tables';
import { toBool, toDateOrNull } from '../db/values';
import { orgFromRow } from './rows';
import { clock } from '../core/clock';
import type { components } from '../../generated/api';
import { type Nullable, type Renamed, oneOf } from '../db/row-types';
import { everyValue } from '../core/enum-values';

export interface Team {
  id: string;
  organizationId: string;
  slug: string;
  name: string;
  /** Whether members who are not maintainers may create pipelines in this team. */
  membersCanCreatePipelines: boolean;
}

export type TeamRole = components['schemas']['TeamMemberRole'];
const TEAM_ROLES = everyValue<TeamRole>()(['member', 'maintainer']);
const ROLES = everyValue<Role>()(['admin', 'member']);

export type PipelineSettingSwitchName = 'hosted_agents_ssh' | 'public_pipelines' | 'advanced_queue_metrics';

export interface PipelineSettingSwitch {
  enabledAt: Date | null;
  enabledBy: { id: string; name: string } | null;
}

export interface PipelineSettings {
  defaultBranch: string | null;
  /** Null also when the cluster it named was deleted since. */
  defaultClusterId: string | null;
  defaultTimeoutInMinutes: number | null;
  maximumTimeoutInMinutes: number | null;
  scheduledJobExpiryInMinutes: number | null;
  switches: Record<PipelineSettingSwitchName, PipelineSettingSwitch>;
}

export const PIPELINE_SETTING_SWITCHES: PipelineSettingSwitchName[] = ['hosted_agents_ssh', 'public_pipelines', 'advanced_queue_metrics'];

export interface ApiSettings {
  allowedIpAddresses: string | null;
  revokeInactiveTokensAfterDays: number | null;
  restrictUserApiTokenCreation: boolean;
}

function teamFromRow(row: TeamsRow): Team {
  return {
    id: row.id,
    organizationId: row.organization_id,
    slug: row.slug,
    name: row.name,
    membersCanCreatePipelines: toBool(row.members_can_create_pipelines),
  };
}

/** `pipelineSettings`' read: the organization, its default cluster if it is still one of its own, and who turned each switch on. */
type PipelineSettingsRow = OrganizationsRow &
  Nullable<Renamed<ClustersRow, { cluster_id: 'id' }>> & { [S in PipelineSettingSwitchName as `${S}_by_name`]: UsersRow['name'] | null };

export class OrganizationRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex): OrganizationRepository {
    return new OrganizationRepository(trx);
  }

  async create(input: { slug: string; name: string; teamsEnabled?: boolean }, trx: Knex = this.db): Promise<Organization> {
    const org: Organization = {
      id: crypto.randomUUID(),
      slug: input.slug,
      name: input.name,
      teamsEnabled: input.teamsEnabled ?? false,
      createdAt: clock.now(),
    };
    await trx('organizations').insert({
      id: org.id,
      slug: org.slug,
      name: org.name,
      teams_enabled: org.teamsEnabled,
      created_at: org.createdAt,
    });
    return org;
  }

  /** Every organization's id (the installation admin token reaches all of them). */
  async allIds(trx: Knex = this.db): Promise<string[]> {
    return (await trx('organizations').orderBy('created_at').select('id')).map((r: { id: string }) => r.id);
  }

  async count(trx: Knex = this.db): Promise<number> {
    const row = await trx('organizations').count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async findById(id: string, trx: Knex = this.db): Promise<Organization | null> {
    const row = await trx('organizations').where({ id }).first();
    return row ? orgFromRow(row) : null;
  }

  async findBySlug(slug: string, trx: Knex = this.db): Promise<Organization | null> {
    const row = await trx('organizations').where({ slug }).first();
    return row ? orgFromRow(row) : null;
  }

  /** The organization's API settings (its row's columns). */
  async apiSettings(id: string, trx: Knex = this.db): Promise<ApiSettings> {
    const row = await trx('organizations').where({ id }).first('allowed_ip_addresses', 'revoke_inactive_tokens_after_days', 'restrict_user_api_token_creation');
    return {
      allowedIpAddresses: row?.allowed_ip_addresses ?? null,
      revokeInactiveTokensAfterDays: row?.revoke_inactive_tokens_after_days == null ? null : Number(row.revoke_inactive_tokens_after_days),
      restrictUserApiTokenCreation: toBool(row?.restrict_user_api_token_creation),
    };
  }

  /** The API IP allow-list of each of the organizations (null: none), for the request guard. */
  async allowedIpAddresses(id: string, trx: Knex = this.db): Promise<string | null> {
    const row = await trx('organizations').where({ id }).first('allowed_ip_addresses');
    return row?.allowed_ip_addresses ?? null;
  }

  async updateApiSettings(id: string, patch: Partial<ApiSettings>, trx: Knex = this.db): Promise<void> {
    const row: Partial<Pick<OrganizationsRow, 'allowed_ip_addresses' | 'revoke_inactive_tokens_after_days' | 'restrict_user_api_token_creation'>> = {};
    if (patch.allowedIpAddresses !== undefined) row.allowed_ip_addresses = patch.allowedIpAddresses;
    if (patch.revokeInactiveTokensAfterDays !== undefined) row.revoke_inactive_tokens_after_days = patch.revokeInactiveTokensAfterDays;
    if (patch.restrictUserApiTokenCreation !== undefined) row.restrict_user_api_token_creation = patch.restrictUserApiTokenCreation;
    if (Object.keys(row).length) await trx('organizations').where({ id }).update(row);
  }

  async pipelineSettings(id: string, trx: Knex = this.db): Promise<PipelineSettings> {
    let q: Knex.QueryBuilder<PipelineSettingsRow, PipelineSettingsRow[]> = trx('organizations as o')
      .where('o.id', id)
      .leftJoin('clusters as c', function () {
        this.on('c.id', '=', 'o.default_cluster_id').andOn('c.organization_id', '=', 'o.id');
      })
      .select('o.*', 'c.id as cluster_id');
    for (const sw of PIPELINE_SETTING_SWITCHES)
      q = q.leftJoin(`users as ${sw}_u`, `${sw}_u.id`, `o.${sw}_enabled_by_id`).select(`${sw}_u.name as ${sw}_by_name`);
    const row = await q.first();
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    const switchOf = (sw: PipelineSettingSwitchName): PipelineSettingSwitch => {
      const id = row?.[`${sw}_enabled_by_id` as const];
      const name = row?.[`${sw}_by_name` as const];
      return { enabledAt: toDateOrNull(row?.[`${sw}_enabled_at` as const]), enabledBy: id && name ? { id, name } : null };
    };
    const switches: Record<PipelineSettingSwitchName, PipelineSettingSwitch> = {
      hosted_agents_ssh: switchOf('hosted_agents_ssh'),
      public_pipelines: switchOf('public_pipelines'),
      advanced_queue_metrics: switchOf('advanced_queue_metrics'),
    };
    return {
      defaultBranch: row?.default_branch ?? null,
      defaultClusterId: row?.cluster_id ?? null,
      defaultTimeoutInMinutes: num(row?.default_timeout_in_minutes),
      maximumTimeoutInMinutes: num(row?.maximum_timeout_in_minutes),
      scheduledJobExpiryInMinutes: num(row?.scheduled_job_expiry_in_minutes),
      switches,
    };
  }

  async updatePipelineSettings(id: string, patch: Partial<Omit<PipelineSettings, 'switches'>>, trx: Knex = this.db): Promise<void> {
    const columns: Record<string, unknown> = {
      default_branch: patch.defaultBranch,
      default_cluster_id: patch.defaultClusterId,
      default_timeout_in_minutes: patch.defaultTimeoutInMinutes,
      maximum_timeout_in_minutes: patch.maximumTimeoutInMinutes,
      scheduled_job_expiry_in_minutes: patch.scheduledJobExpiryInMinutes,
    };
    const row = Object.fromEntries(Object.entries(columns).filter(([, v]) => v !== undefined));
    if (Object.keys(row).length) await trx('organizations').where({ id }).update(row);
  }

  /** Turns a switch on (when, by whom) or off (null). */
  async setPipelineSettingSwitch(id: string, name: PipelineSettingSwitchName, on: { at: Date; userId: string } | null, trx: Knex = this.db): Promise<void> {
    await trx('organizations')
      .where({ id })
      .update({ [`${name}_enabled_at`]: on?.at ?? null, [`${name}_enabled_by_id`]: on?.userId ?? null });
  }

  /** Whether the cluster (a UUID) is one of the organization's. */
  async hasCluster(organizationId: string, clusterId: string, trx: Knex = this.db): Promise<boolean> {
    return Boolean(await trx('clusters').where({ organization_id: organizationId, id: clusterId.toLowerCase() }).first('id'));
  }

  async enableTeams(id: string, trx: Knex = this.db): Promise<void> {
    await trx('organizations').where({ id }).update({ teams_enabled: true });
  }

  /**
   * The "Everyone" team that enabling teams makes in an organization with no team (teams.md):
   * every member in it, every pipeline (manage, build and read) and suite (read and edit) reached
   * by it, and the organization's default team, so no member loses what they could see. False
   * when the organization has teams already.
   */
  async createEveryoneTeam(organizationId: string, trx: Knex): Promise<boolean> {
    if (await trx('teams').where({ organization_id: organizationId }).first('id')) return false;
    const now = clock.now();
    const id = crypto.randomUUID();
    await trx('teams').insert({ id, organization_id: organizationId, slug: 'everyone', name: 'Everyone', created_at: now, is_default_team: true });
    const inChunks = async <T>(rows: T[], insert: (part: T[]) => Promise<unknown>) => {
      for (let i = 0; i < rows.length; i += 100) await insert(rows.slice(i, i + 100));
    };
    const members = await trx('organization_members').where({ organization_id: organizationId }).select<{ user_id: string }[]>('user_id');
    await inChunks(members, (part) => trx('team_members').insert(part.map((m) => ({ team_id: id, user_id: m.user_id, role: 'member', created_at: now }))));
    const pipelines = await trx('pipelines').where({ organization_id: organizationId }).select<{ id: string }[]>('id');
    await inChunks(pipelines, (part) =>
      trx('pipeline_teams').insert(part.map((p) => ({ pipeline_id: p.id, team_id: id, access_level: 'manage_build_and_read', created_at: now }))),
    );
    const suites = await trx('suites').where({ organization_id: organizationId }).select<{ id: string }[]>('id');
    await inChunks(suites, (part) => trx('suite_teams').insert(part.map((s) => ({ suite_id: s.id, team_id: id, access_level: 'edit', created_at: now }))));
    return true;
  }

  /** Every organization by slug (the command line's `org list`). */
  async all(trx: Knex = this.db): Promise<Organization[]> {
    const rows = await trx('organizations').orderBy('slug');
    return rows.map(orgFromRow);
  }

  /** One page of the given organizations ordered by name, and the total. */
  async pageByIds(ids: string[], offset: number, limit: number, trx: Knex = this.db): Promise<{ items: Organization[]; total: number }> {
    if (ids.length === 0) return { items: [], total: 0 };
    const rows = await trx('organizations')
      .whereIn('id', ids)
      .orderBy([{ column: 'name' }, { column: 'id' }])
      .offset(offset)
      .limit(limit);
    return { items: rows.map(orgFromRow), total: ids.length };
  }

  /** Adds the user (or changes their role); a new member joins the organization's default teams with each team's default role. */
  async addMember(organizationId: string, userId: string, role: Role, trx: Knex = this.db): Promise<void> {
    const existing = await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).first('user_id');
    await trx('organization_members')
      .insert({ organization_id: organizationId, user_id: userId, role })
      .onConflict(['organization_id', 'user_id'])
      .merge({ role });
    if (existing) return;
    const defaults = await trx('teams').where({ organization_id: organizationId, is_default_team: true }).select('id', 'default_member_role');
    if (defaults.length) {
      await trx('team_members')
        .insert(defaults.map((t) => ({ team_id: t.id, user_id: userId, role: t.default_member_role, created_at: clock.now() })))
        .onConflict(['team_id', 'user_id'])
        .ignore();
    }
  }

  /** A member of the organization, as a user; null when the user is not one (or does not exist). */
  async findMember(organizationId: string, userId: string, trx: Knex = this.db): Promise<User | null> {
    const row = await trx('organization_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
      .first<UsersRow | undefined>('u.id', 'u.name', 'u.email', 'u.created_at');
    return row ? userFromRow(row) : null;
  }

  /** The user's memberships: organization id -> role. */
  async membershipsOf(userId: string, trx: Knex = this.db): Promise<Map<string, Role>> {
    const rows = await trx('organization_members').where({ user_id: userId }).select('organization_id', 'role');
    return new Map(rows.map((r) => [r.organization_id, oneOf(ROLES, r.role, 'organization_members.role')]));
  }

  async createTeam(input: { organizationId: string; slug: string; name: string }, trx: Knex = this.db): Promise<Team> {
    const team: Team = { id: crypto.randomUUID(), ...input, membersCanCreatePipelines: true };
    await trx('teams').insert({ id: team.id, organization_id: team.organizationId, slug: team.slug, name: team.name, created_at: clock.now() });
    return team;
  }

  async findTeam(organizationId: string, idOrSlug: string, trx: Knex = this.db): Promise<Team | null> {
    const row = await trx('teams')
      .where({ organization_id: organizationId })
      .andWhere((q) => {
        q.where({ slug: idOrSlug });
        if (/^[0-9a-f-]{36}$/i.test(idOrSlug)) q.orWhere({ id: idOrSlug.toLowerCase() });
      })
      .first();
    return row ? teamFromRow(row) : null;
  }

  async addTeamMember(teamId: string, userId: string, trx: Knex = this.db, role: TeamRole = 'member'): Promise<void> {
    await trx('team_members').insert({ team_id: teamId, user_id: userId, role, created_at: clock.now() }).onConflict(['team_id', 'user_id']).ignore();
  }

  /** The user's teams in the organization, with their role in each. */
  async teamRolesOf(userId: string, organizationId: string, trx: Knex = this.db): Promise<Map<string, TeamRole>> {
    const rows = await trx('team_members')
      .join('teams', 'teams.id', 'team_members.team_id')
      .where('team_members.user_id', userId)
      .where('teams.organization_id', organizationId)
      .select<(Pick<TeamsRow, 'id'> & Pick<TeamMembersRow, 'role'>)[]>('teams.id', 'team_members.role');
    return new Map(rows.map((r) => [r.id, oneOf(TEAM_ROLES, r.role, 'team_members.role')]));
  }

  /** The slugs of the organization's teams the user is a member of (`build.creator.teams`). */
  async teamSlugsOf(userId: string, organizationId: string, trx: Knex = this.db): Promise<string[]> {
    const rows = await trx('team_members')
      .join('teams', 'teams.id', 'team_members.team_id')
      .where('team_members.user_id', userId)
      .where('teams.organization_id', organizationId)
      .orderBy('teams.slug')
      .select<Pick<TeamsRow, 'slug'>[]>('teams.slug');
    return rows.map((r) => r.slug);
  }

  async teamIdsOf(userId: string, organizationId: string, trx: Knex = this.db): Promise<Set<string>> {
    const rows = await trx('team_members')
      .join('teams', 'teams.id', 'team_members.team_id')
      .where('team_members.user_id', userId)
      .where('teams.organization_id', organizationId)
      .select<Pick<TeamsRow, 'id'>[]>('teams.id');
    return new Set(rows.map((r) => r.id));
  }
}
