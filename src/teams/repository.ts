/** Teams, their memberships and grants, and the organization's members: Knex queries, rows in and domain objects out. */
import type { Knex } from 'knex';
import type { Role, User } from '../core/identity';
import { isUniqueViolation } from '../db/knex';
import type { OrganizationMembersRow, PipelineTeamsRow, PipelinesRow, SuiteTeamsRow, SuitesRow, TeamMembersRow, TeamsRow, UsersRow } from '../db/tables';
import { toBool, toDate, toDateOrNull } from '../db/values';
import { ValidationError } from '../core/errors';
import { userFromRow } from '../user/rows';
import type { components } from '../../generated/api';
import { type Nullable, type Prefixed, type Renamed, oneOf } from '../db/row-types';
import { everyValue } from '../core/enum-values';

type Schemas = components['schemas'];

export type TeamPrivacy = Schemas['TeamPrivacy'];
export type TeamRole = Schemas['TeamMemberRole'];
export type PipelineAccessLevel = Schemas['PipelineAccessLevel'];
/** One permission of a suite grant (the spec's `access_level` is a list of them). */
export type SuiteAccessLevel = Schemas['SuitePermission'];
export type SsoMode = Schemas['SsoMode'];

export interface TeamFields {
  name: string;
  slug: string;
  description: string | null;
  privacy: TeamPrivacy;
  isDefaultTeam: boolean;
  defaultMemberRole: TeamRole;
  membersCanCreatePipelines: boolean;
  membersCanCreateSuites: boolean;
  membersCanDestroySuites: boolean;
  membersCanCreateRegistries: boolean;
  membersCanDestroyRegistries: boolean;
  membersCanDestroyPackages: boolean;
}

export interface TeamRecord extends TeamFields {
  id: string;
  organizationId: string;
  createdAt: Date;
  createdBy: User | null;
}

export interface TeamMembership {
  teamId: string;
  user: User;
  role: TeamRole;
  createdAt: Date;
}

export interface PipelineGrant {
  teamId: string;
  pipelineId: string;
  pipelineSlug: string;
  accessLevel: PipelineAccessLevel;
  createdAt: Date;
}

export interface SuiteGrant {
  teamId: string;
  suiteId: string;
  suiteSlug: string;
  accessLevel: SuiteAccessLevel;
  createdAt: Date;
}

export interface OrganizationMembership {
  user: User;
  role: Role;
  ssoMode: SsoMode;
}

const TEAM_PRIVACIES = everyValue<TeamPrivacy>()(['visible', 'secret']);
const TEAM_ROLES = everyValue<TeamRole>()(['member', 'maintainer']);
const PIPELINE_ACCESS_LEVELS = everyValue<PipelineAccessLevel>()(['read_only', 'build_and_read', 'manage_build_and_read']);
const SUITE_ACCESS_LEVELS = everyValue<SuiteAccessLevel>()(['read', 'edit']);
const ROLES = everyValue<Role>()(['admin', 'member']);
const SSO_MODES = everyValue<SsoMode>()(['required', 'optional']);

const TEAM_COLUMNS = ['t.*', 'u.id as creator_id', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at'];

/** A team with its creator (left join, TEAM_COLUMNS). */
type TeamRow = TeamsRow & Nullable<Prefixed<UsersRow, 'creator_'>>;

function teamFromRow(r: TeamRow): TeamRecord {
  return {
    id: r.id,
    organizationId: r.organization_id,
    name: r.name,
    slug: r.slug,
    description: r.description ?? null,
    privacy: oneOf(TEAM_PRIVACIES, r.privacy, 'teams.privacy'),
    isDefaultTeam: toBool(r.is_default_team),
    defaultMemberRole: oneOf(TEAM_ROLES, r.default_member_role, 'teams.default_member_role'),
    membersCanCreatePipelines: toBool(r.members_can_create_pipelines),
    membersCanCreateSuites: toBool(r.members_can_create_suites),
    membersCanDestroySuites: toBool(r.members_can_destroy_suites),
    membersCanCreateRegistries: toBool(r.members_can_create_registries),
    membersCanDestroyRegistries: toBool(r.members_can_destroy_registries),
    membersCanDestroyPackages: toBool(r.members_can_destroy_packages),
    createdAt: toDate(r.created_at),
    createdBy:
      r.creator_id && r.creator_name !== null && r.creator_email !== null
        ? userFromRow({ id: r.creator_id, name: r.creator_name, email: r.creator_email, created_at: r.creator_created_at })
        : null,
  };
}

function teamColumns(f: Partial<TeamFields>): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  const set = (col: string, v: unknown) => {
    if (v !== undefined) c[col] = v;
  };
  set('name', f.name);
  set('slug', f.slug);
  set('description', f.description);
  set('privacy', f.privacy);
  set('is_default_team', f.isDefaultTeam);
  set('default_member_role', f.defaultMemberRole);
  set('members_can_create_pipelines', f.membersCanCreatePipelines);
  set('members_can_create_suites', f.membersCanCreateSuites);
  set('members_can_destroy_suites', f.membersCanDestroySuites);
  set('members_can_create_registries', f.membersCanCreateRegistries);
  set('members_can_destroy_registries', f.membersCanDestroyRegistries);
  set('members_can_destroy_packages', f.membersCanDestroyPackages);
  return c;
}

/** A team's membership with the member's columns (`memberships`). */
type MembershipRow = Pick<TeamMembersRow, 'team_id' | 'role'> & Renamed<TeamMembersRow, { member_since: 'created_at' }> & UsersRow;

/** A team's pipeline grant with the pipeline's slug and creation (`pipelineGrants`). */
type PipelineGrantRow = PipelineTeamsRow & Pick<PipelinesRow, 'slug'> & Renamed<PipelinesRow, { pipeline_created_at: 'created_at' }>;

/** A team's suite grant with the suite's slug and creation (`suiteGrants`). */
type SuiteGrantRow = SuiteTeamsRow & Pick<SuitesRow, 'slug'> & Renamed<SuitesRow, { suite_created_at: 'created_at' }>;

/** An organization's member with the user's columns (`orgMembers`). */
type OrgMemberRow = Pick<OrganizationMembersRow, 'role' | 'sso_mode'> & UsersRow;

const nameTaken = () => new ValidationError([{ field: 'name', code: 'has already been taken (a team with this name or slug exists)' }]);

export class TeamRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex): TeamRepository {
    return new TeamRepository(trx);
  }

  private teams(): Knex.QueryBuilder<TeamRow, TeamRow[]> {
    return this.db('teams as t').leftJoin('users as u', 'u.id', 't.created_by_id').select(TEAM_COLUMNS);
  }

  /**
   * One page of the organization's teams by name. `visibleTo`: secret teams only if this user
   * is a member; `memberUserId`: only teams with this member.
   */
  async list(
    organizationId: string,
    filter: { visibleTo?: string; memberUserId?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: TeamRecord[]; total: number }> {
    const filtered = () => {
      const q = this.db('teams as t').where('t.organization_id', organizationId);
      if (filter.visibleTo) {
        const userId = filter.visibleTo;
        q.andWhere((w) => {
          w.where('t.privacy', 'visible').orWhereIn('t.id', this.db('team_members').where('user_id', userId).select('team_id'));
        });
      }
      if (filter.memberUserId) q.whereIn('t.id', this.db('team_members').where('user_id', filter.memberUserId).select('team_id'));
      return q;
    };
    const [countRow, ids] = await Promise.all([
      filtered().count<{ n: number | string }[]>({ n: '*' }).first(),
      filtered()
        .orderBy([{ column: 't.name' }, { column: 't.id' }])
        .offset(offset)
        .limit(limit)
        .select<Pick<TeamsRow, 'id'>[]>('t.id'),
    ]);
    const rows = ids.length
      ? await this.teams().whereIn(
          't.id',
          ids.map((r) => r.id),
        )
      : [];
    const byId = new Map(rows.map((r) => [r.id, teamFromRow(r)]));
    return { items: ids.map((r) => byId.get(r.id)!).filter(Boolean), total: Number(countRow?.n ?? 0) };
  }

  async findById(organizationId: string, id: string): Promise<TeamRecord | null> {
    const row = await this.teams().where('t.organization_id', organizationId).where('t.id', id.toLowerCase()).first();
    return row ? teamFromRow(row) : null;
  }

  async findBySlug(organizationId: string, slug: string): Promise<TeamRecord | null> {
    const row = await this.teams().where('t.organization_id', organizationId).where('t.slug', slug).first();
    return row ? teamFromRow(row) : null;
  }

  async insert(t: { id: string; organizationId: string; createdAt: Date; createdById: string | null } & TeamFields): Promise<void> {
    if (await this.db('teams').where({ organization_id: t.organizationId, slug: t.slug }).first('id')) throw nameTaken();
    try {
      await this.db('teams').insert({
        id: t.id,
        organization_id: t.organizationId,
        created_at: t.createdAt,
        created_by_id: t.createdById,
        ...teamColumns(t),
      });
    } catch (err) {
      throw isUniqueViolation(err) ? nameTaken() : err;
    }
  }

  async update(team: TeamRecord, changes: Partial<TeamFields>): Promise<void> {
    const cols = teamColumns(changes);
    if (!Object.keys(cols).length) return;
    if (changes.slug && changes.slug !== team.slug) {
      if (await this.db('teams').where({ organization_id: team.organizationId, slug: changes.slug }).whereNot('id', team.id).first('id')) throw nameTaken();
    }
    try {
      await this.db('teams').where({ id: team.id }).update(cols);
    } catch (err) {
      throw isUniqueViolation(err) ? nameTaken() : err;
    }
  }

  /** The team and, with it, its memberships and its pipeline and suite grants. */
  async delete(id: string): Promise<void> {
    await this.db('team_members').where({ team_id: id }).delete();
    await this.db('pipeline_teams').where({ team_id: id }).delete();
    await this.db('suite_teams').where({ team_id: id }).delete();
    await this.db('teams').where({ id }).delete();
  }

  // -- members

  private memberships(): Knex.QueryBuilder<MembershipRow, MembershipRow[]> {
    return this.db('team_members as tm')
      .join('users as u', 'u.id', 'tm.user_id')
      .select('tm.team_id', 'tm.role', 'tm.created_at as member_since', 'u.id', 'u.name', 'u.email', 'u.created_at');
  }

  private membershipFromRow(r: MembershipRow, fallback: Date): TeamMembership {
    return {
      teamId: r.team_id,
      user: userFromRow(r),
      role: oneOf(TEAM_ROLES, r.role, 'team_members.role'),
      createdAt: toDateOrNull(r.member_since) ?? fallback,
    };
  }

  async listMembers(team: TeamRecord, offset: number, limit: number): Promise<{ items: TeamMembership[]; total: number }> {
    const [countRow, rows] = await Promise.all([
      this.db('team_members').where({ team_id: team.id }).count<{ n: number | string }[]>({ n: '*' }).first(),
      this.memberships()
        .where('tm.team_id', team.id)
        .orderBy([{ column: 'tm.created_at' }, { column: 'u.id' }])
        .offset(offset)
        .limit(limit),
    ]);
    return { items: rows.map((r) => this.membershipFromRow(r, team.createdAt)), total: Number(countRow?.n ?? 0) };
  }

  async findMember(team: TeamRecord, userId: string): Promise<TeamMembership | null> {
    const row = await this.memberships().where('tm.team_id', team.id).where('tm.user_id', userId.toLowerCase()).first();
    return row ? this.membershipFromRow(row, team.createdAt) : null;
  }

  /** False when the user already was a member. */
  async addMember(teamId: string, userId: string, role: TeamRole, createdAt: Date): Promise<boolean> {
    const inserted = await this.db('team_members')
      .insert({ team_id: teamId, user_id: userId, role, created_at: createdAt })
      .onConflict(['team_id', 'user_id'])
      .ignore()
      .returning('user_id');
    return inserted.length > 0;
  }

  async setMemberRole(teamId: string, userId: string, role: TeamRole): Promise<void> {
    await this.db('team_members').where({ team_id: teamId, user_id: userId }).update({ role });
  }

  async removeMember(teamId: string, userId: string): Promise<void> {
    await this.db('team_members').where({ team_id: teamId, user_id: userId }).delete();
  }

  /** The user's role in the team, or null when not a member. */
  async roleOf(teamId: string, userId: string): Promise<TeamRole | null> {
    const row = await this.db('team_members').where({ team_id: teamId, user_id: userId }).first('role');
    return row ? oneOf(TEAM_ROLES, row.role, 'team_members.role') : null;
  }

  // -- pipeline grants

  private pipelineGrants(): Knex.QueryBuilder<PipelineGrantRow, PipelineGrantRow[]> {
    return this.db('pipeline_teams as pt')
      .join('pipelines as p', 'p.id', 'pt.pipeline_id')
      .select('pt.team_id', 'pt.pipeline_id', 'pt.access_level', 'pt.created_at', 'p.slug', 'p.created_at as pipeline_created_at');
  }

  private pipelineGrantFromRow(r: PipelineGrantRow): PipelineGrant {
    return {
      teamId: r.team_id,
      pipelineId: r.pipeline_id,
      pipelineSlug: r.slug,
      accessLevel: oneOf(PIPELINE_ACCESS_LEVELS, r.access_level, 'pipeline_teams.access_level'),
      createdAt: toDateOrNull(r.created_at) ?? toDate(r.pipeline_created_at),
    };
  }

  async listPipelines(teamId: string, offset: number, limit: number): Promise<{ items: PipelineGrant[]; total: number }> {
    const [countRow, rows] = await Promise.all([
      this.db('pipeline_teams').where({ team_id: teamId }).count<{ n: number | string }[]>({ n: '*' }).first(),
      this.pipelineGrants()
        .where('pt.team_id', teamId)
        .orderBy([{ column: 'pt.created_at' }, { column: 'pt.pipeline_id' }])
        .offset(offset)
        .limit(limit),
    ]);
    return { items: rows.map((r) => this.pipelineGrantFromRow(r)), total: Number(countRow?.n ?? 0) };
  }

  async findPipelineGrant(teamId: string, pipelineId: string): Promise<PipelineGrant | null> {
    const row = await this.pipelineGrants().where('pt.team_id', teamId).where('pt.pipeline_id', pipelineId.toLowerCase()).first();
    return row ? this.pipelineGrantFromRow(row) : null;
  }

  /** False when the team already had the pipeline. */
  async addPipelineGrant(teamId: string, pipelineId: string, accessLevel: PipelineAccessLevel, createdAt: Date): Promise<boolean> {
    const inserted = await this.db('pipeline_teams')
      .insert({ team_id: teamId, pipeline_id: pipelineId, access_level: accessLevel, created_at: createdAt })
      .onConflict(['pipeline_id', 'team_id'])
      .ignore()
      .returning('pipeline_id');
    return inserted.length > 0;
  }

  async setPipelineAccess(teamId: string, pipelineId: string, accessLevel: PipelineAccessLevel): Promise<void> {
    await this.db('pipeline_teams').where({ team_id: teamId, pipeline_id: pipelineId }).update({ access_level: accessLevel });
  }

  async removePipelineGrant(teamId: string, pipelineId: string): Promise<void> {
    await this.db('pipeline_teams').where({ team_id: teamId, pipeline_id: pipelineId }).delete();
  }

  // -- suite grants

  private suiteGrants(): Knex.QueryBuilder<SuiteGrantRow, SuiteGrantRow[]> {
    return this.db('suite_teams as st')
      .join('suites as s', 's.id', 'st.suite_id')
      .select('st.team_id', 'st.suite_id', 'st.access_level', 'st.created_at', 's.slug', 's.created_at as suite_created_at');
  }

  private suiteGrantFromRow(r: SuiteGrantRow): SuiteGrant {
    return {
      teamId: r.team_id,
      suiteId: r.suite_id,
      suiteSlug: r.slug,
      accessLevel: oneOf(SUITE_ACCESS_LEVELS, r.access_level, 'suite_teams.access_level'),
      createdAt: toDateOrNull(r.created_at) ?? toDate(r.suite_created_at),
    };
  }

  async listSuites(teamId: string, offset: number, limit: number): Promise<{ items: SuiteGrant[]; total: number }> {
    const [countRow, rows] = await Promise.all([
      this.db('suite_teams').where({ team_id: teamId }).count<{ n: number | string }[]>({ n: '*' }).first(),
      this.suiteGrants()
        .where('st.team_id', teamId)
        .orderBy([{ column: 'st.created_at' }, { column: 'st.suite_id' }])
        .offset(offset)
        .limit(limit),
    ]);
    return { items: rows.map((r) => this.suiteGrantFromRow(r)), total: Number(countRow?.n ?? 0) };
  }

  async findSuiteGrant(teamId: string, suiteId: string): Promise<SuiteGrant | null> {
    const row = await this.suiteGrants().where('st.team_id', teamId).where('st.suite_id', suiteId.toLowerCase()).first();
    return row ? this.suiteGrantFromRow(row) : null;
  }

  async addSuiteGrant(teamId: string, suiteId: string, accessLevel: SuiteAccessLevel, createdAt: Date): Promise<boolean> {
    const inserted = await this.db('suite_teams')
      .insert({ team_id: teamId, suite_id: suiteId, access_level: accessLevel, created_at: createdAt })
      .onConflict(['suite_id', 'team_id'])
      .ignore()
      .returning('suite_id');
    return inserted.length > 0;
  }

  async setSuiteAccess(teamId: string, suiteId: string, accessLevel: SuiteAccessLevel): Promise<void> {
    await this.db('suite_teams').where({ team_id: teamId, suite_id: suiteId }).update({ access_level: accessLevel });
  }

  async removeSuiteGrant(teamId: string, suiteId: string): Promise<void> {
    await this.db('suite_teams').where({ team_id: teamId, suite_id: suiteId }).delete();
  }

  // -- organization members

  private orgMembers(): Knex.QueryBuilder<OrgMemberRow, OrgMemberRow[]> {
    return this.db('organization_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .select('m.role', 'm.sso_mode', 'u.id', 'u.name', 'u.email', 'u.created_at');
  }

  private orgMemberFromRow(r: OrgMemberRow): OrganizationMembership {
    return {
      user: userFromRow(r),
      role: oneOf(ROLES, r.role, 'organization_members.role'),
      ssoMode: oneOf(SSO_MODES, r.sso_mode, 'organization_members.sso_mode'),
    };
  }

  async listOrganizationMembers(organizationId: string, offset: number, limit: number): Promise<{ items: OrganizationMembership[]; total: number }> {
    const [countRow, rows] = await Promise.all([
      this.db('organization_members').where({ organization_id: organizationId }).count<{ n: number | string }[]>({ n: '*' }).first(),
      this.orgMembers()
        .where('m.organization_id', organizationId)
        .orderBy([{ column: 'u.name' }, { column: 'u.id' }])
        .offset(offset)
        .limit(limit),
    ]);
    return { items: rows.map((r) => this.orgMemberFromRow(r)), total: Number(countRow?.n ?? 0) };
  }

  async findOrganizationMember(organizationId: string, userId: string): Promise<OrganizationMembership | null> {
    const row = await this.orgMembers().where('m.organization_id', organizationId).where('m.user_id', userId.toLowerCase()).first();
    return row ? this.orgMemberFromRow(row) : null;
  }

  async findOrganizationMemberByEmail(organizationId: string, email: string): Promise<OrganizationMembership | null> {
    const row = await this.orgMembers().where('m.organization_id', organizationId).whereRaw('lower(u.email) = ?', [email.trim().toLowerCase()]).first();
    return row ? this.orgMemberFromRow(row) : null;
  }

  async countAdmins(organizationId: string): Promise<number> {
    const row = await this.db('organization_members')
      .where({ organization_id: organizationId, role: 'admin' })
      .count<{ n: number | string }[]>({ n: '*' })
      .first();
    return Number(row?.n ?? 0);
  }

  async updateOrganizationMember(organizationId: string, userId: string, changes: { role?: Role; ssoMode?: SsoMode }): Promise<void> {
    const cols: Partial<Pick<OrganizationMembersRow, 'role' | 'sso_mode'>> = {};
    if (changes.role) cols.role = changes.role;
    if (changes.ssoMode) cols.sso_mode = changes.ssoMode;
    if (Object.keys(cols).length) await this.db('organization_members').where({ organization_id: organizationId, user_id: userId }).update(cols);
  }

  /** The membership and, with it, the user's memberships of the organization's teams. */
  async removeOrganizationMember(organizationId: string, userId: string): Promise<void> {
    await this.db('team_members').where('user_id', userId).whereIn('team_id', this.db('teams').where('organization_id', organizationId).select('id')).delete();
    await this.db('organization_members').where({ organization_id: organizationId, user_id: userId }).delete();
  }
}
