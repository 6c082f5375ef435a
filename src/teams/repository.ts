/** Teams, their memberships and grants, and the organization's members: Knex queries, rows in and domain objects out. */
import type { Knex } from 'knex';
import type { Role, User } from '../core/identity';
import { isUniqueViolation } from '../db/knex';
import { toBool, toDate, toDateOrNull } from '../db/values';
import { ValidationError } from '../core/errors';
import { userFromRow } from '../user/rows';
import type { components } from '../../generated/api';

type UserRow = Parameters<typeof userFromRow>[0];

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

const TEAM_COLUMNS = ['t.*', 'u.id as creator_id', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at'];

function teamFromRow(r: Record<string, unknown>): TeamRecord {
  return {
    id: r.id as string,
    organizationId: r.organization_id as string,
    name: r.name as string,
    slug: r.slug as string,
    description: (r.description as string | null) ?? null,
    privacy: (r.privacy as TeamPrivacy) ?? 'visible',
    isDefaultTeam: toBool(r.is_default_team),
    defaultMemberRole: (r.default_member_role as TeamRole) ?? 'member',
    membersCanCreatePipelines: toBool(r.members_can_create_pipelines),
    membersCanCreateSuites: toBool(r.members_can_create_suites),
    membersCanDestroySuites: toBool(r.members_can_destroy_suites),
    membersCanCreateRegistries: toBool(r.members_can_create_registries),
    membersCanDestroyRegistries: toBool(r.members_can_destroy_registries),
    createdAt: toDate(r.created_at),
    createdBy: r.creator_id
      ? userFromRow({ id: r.creator_id as string, name: r.creator_name as string, email: r.creator_email as string, created_at: r.creator_created_at })
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
  return c;
}

const nameTaken = () => new ValidationError([{ field: 'name', code: 'has already been taken (a team with this name or slug exists)' }]);

export class TeamRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex): TeamRepository {
    return new TeamRepository(trx);
  }

  private teams() {
    return this.db('teams as t').leftJoin('users as u', 'u.id', 't.created_by_id');
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
        .select('t.id'),
    ]);
    const rows = ids.length
      ? await this.teams()
          .whereIn(
            't.id',
            ids.map((r) => r.id as string),
          )
          .select(TEAM_COLUMNS)
      : [];
    const byId = new Map(rows.map((r) => [r.id as string, teamFromRow(r)]));
    return { items: ids.map((r) => byId.get(r.id as string)!).filter(Boolean), total: Number(countRow?.n ?? 0) };
  }

  async findById(organizationId: string, id: string): Promise<TeamRecord | null> {
    const row = await this.teams().where({ 't.organization_id': organizationId, 't.id': id.toLowerCase() }).first(TEAM_COLUMNS);
    return row ? teamFromRow(row) : null;
  }

  async findBySlug(organizationId: string, slug: string): Promise<TeamRecord | null> {
    const row = await this.teams().where({ 't.organization_id': organizationId, 't.slug': slug }).first(TEAM_COLUMNS);
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

  private memberships() {
    return this.db('team_members as tm')
      .join('users as u', 'u.id', 'tm.user_id')
      .select('tm.team_id', 'tm.role', 'tm.created_at as member_since', 'u.id', 'u.name', 'u.email', 'u.created_at');
  }

  private membershipFromRow(r: Record<string, unknown>, fallback: Date): TeamMembership {
    return {
      teamId: r.team_id as string,
      user: userFromRow(r as UserRow),
      role: (r.role as TeamRole) ?? 'member',
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
    const row = await this.memberships().where({ 'tm.team_id': team.id, 'tm.user_id': userId.toLowerCase() }).first();
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
    return row ? ((row.role as TeamRole) ?? 'member') : null;
  }

  // -- pipeline grants

  private pipelineGrants() {
    return this.db('pipeline_teams as pt')
      .join('pipelines as p', 'p.id', 'pt.pipeline_id')
      .select('pt.team_id', 'pt.pipeline_id', 'pt.access_level', 'pt.created_at', 'p.slug', 'p.created_at as pipeline_created_at');
  }

  private pipelineGrantFromRow(r: Record<string, unknown>): PipelineGrant {
    return {
      teamId: r.team_id as string,
      pipelineId: r.pipeline_id as string,
      pipelineSlug: r.slug as string,
      accessLevel: r.access_level as PipelineAccessLevel,
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
    const row = await this.pipelineGrants().where({ 'pt.team_id': teamId, 'pt.pipeline_id': pipelineId.toLowerCase() }).first();
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

  private suiteGrants() {
    return this.db('suite_teams as st')
      .join('suites as s', 's.id', 'st.suite_id')
      .select('st.team_id', 'st.suite_id', 'st.access_level', 'st.created_at', 's.slug', 's.created_at as suite_created_at');
  }

  private suiteGrantFromRow(r: Record<string, unknown>): SuiteGrant {
    return {
      teamId: r.team_id as string,
      suiteId: r.suite_id as string,
      suiteSlug: r.slug as string,
      accessLevel: (r.access_level as SuiteAccessLevel) ?? 'edit',
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
    const row = await this.suiteGrants().where({ 'st.team_id': teamId, 'st.suite_id': suiteId.toLowerCase() }).first();
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

  private orgMembers() {
    return this.db('organization_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .select('m.role', 'm.sso_mode', 'u.id', 'u.name', 'u.email', 'u.created_at');
  }

  private orgMemberFromRow(r: Record<string, unknown>): OrganizationMembership {
    return { user: userFromRow(r as UserRow), role: r.role as Role, ssoMode: (r.sso_mode as SsoMode) ?? 'optional' };
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
    const row = await this.orgMembers().where({ 'm.organization_id': organizationId, 'm.user_id': userId.toLowerCase() }).first();
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
    const cols: Record<string, unknown> = {};
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
