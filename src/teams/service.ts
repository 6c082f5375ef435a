/**
 * The rules of teams: who sees a team (secret teams: their members and the organization's
 * admins), who manages one (admins; a team's maintainers manage its settings, members and
 * grants, but only grant what they may manage themselves), who creates and deletes teams
 * (admins), a new member's default role, and the organization's members (admins change and
 * remove them, never their own membership, never the last admin). Writes that span rows run in
 * one transaction. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { ForbiddenError, NotFoundError, ValidationError, type FieldError } from '../core/errors';
import type { Actor, Organization, Role } from '../core/identity';
import type { AuditEntry, AuditLog } from '../audit/service';
import type { PipelineService } from '../pipelines/service';
import { isValidSlug, slugify } from '../pipelines/slug';
import type { SuiteService } from '../suites/service';
import type {
  OrganizationMembership,
  PipelineAccessLevel,
  PipelineGrant,
  SsoMode,
  SuiteAccessLevel,
  SuiteGrant,
  TeamFields,
  TeamMembership,
  TeamRecord,
  TeamRepository,
  TeamRole,
} from './repository';
import { clock } from '../core/clock';
import { isUuid } from '../core/uuid';
import type { components } from '../../generated/api';

/** The person at the command line (`windsock team ...`): an operator of the installation, an admin of every organization, no user. */
export interface Operator {
  operator: true;
  organization: Organization;
}
export type TeamCaller = Actor | Operator;

const isOperator = (c: TeamCaller): c is Operator => 'operator' in c;
const isAdmin = (c: TeamCaller) => isOperator(c) || c.role === 'admin';
const userIdOf = (c: TeamCaller) => (isOperator(c) ? null : c.principal.user.id);

/** What a create or update of a team may set: the spec's `TeamWritable`. */
export type TeamInput = components['schemas']['TeamWritable'];

export class TeamService {
  constructor(
    private readonly db: Knex,
    private readonly teams: TeamRepository,
    private readonly pipelines: Pick<PipelineService, 'readableByIds'>,
    private readonly suites: Pick<SuiteService, 'forGrant'>,
    private readonly audit: AuditLog,
  ) {}

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(caller: TeamCaller, change: (teams: TeamRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    return this.audit.transaction(caller, (trx) => change(this.teams.withTransaction(trx)), entry);
  }

  private async roleIn(caller: TeamCaller, team: TeamRecord): Promise<TeamRole | null> {
    const userId = userIdOf(caller);
    return userId ? this.teams.roleOf(team.id, userId) : null;
  }

  /** A team the caller may see (a secret one only as its member or an admin), by UUID or slug; else 404 as if it did not exist. */
  async get(caller: TeamCaller, idOrSlug: string): Promise<TeamRecord> {
    const orgId = caller.organization.id;
    const team = isUuid(idOrSlug) ? await this.teams.findById(orgId, idOrSlug) : await this.teams.findBySlug(orgId, idOrSlug);
    if (!team) throw new NotFoundError('team');
    if (team.privacy === 'secret' && !isAdmin(caller) && !(await this.roleIn(caller, team))) throw new NotFoundError('team');
    return team;
  }

  /** A team the caller may manage: an admin, or one of its maintainers; 403 for anyone else who may see it. */
  private async getManageable(caller: TeamCaller, idOrSlug: string): Promise<TeamRecord> {
    const team = await this.get(caller, idOrSlug);
    if (!isAdmin(caller) && (await this.roleIn(caller, team)) !== 'maintainer') throw new ForbiddenError();
    return team;
  }

  async list(caller: TeamCaller, filter: { userId?: string }, offset: number, limit: number) {
    const visibleTo = isAdmin(caller) ? undefined : (userIdOf(caller) ?? undefined);
    if (filter.userId !== undefined && !isUuid(filter.userId)) return { items: [], total: 0 };
    return this.teams.list(caller.organization.id, { visibleTo, memberUserId: filter.userId?.toLowerCase() }, offset, limit);
  }

  async create(caller: TeamCaller, input: TeamInput & { slug?: string }): Promise<TeamRecord> {
    if (!isAdmin(caller)) throw new ForbiddenError();
    const errors: FieldError[] = [];
    const name = (input.name ?? '').trim();
    if (!name) errors.push({ field: 'name', code: "can't be blank" });
    const slug = input.slug ?? slugify(name);
    if (input.slug !== undefined && !isValidSlug(input.slug)) errors.push({ field: 'slug', code: 'must be lower-case letters, digits and single dashes' });
    else if (name && !slug) errors.push({ field: 'name', code: 'must contain at least one letter or digit' });
    if (errors.length) throw new ValidationError(errors);
    const id = crypto.randomUUID();
    const fields = {
      id,
      organizationId: caller.organization.id,
      createdAt: clock.now(),
      createdById: userIdOf(caller),
      name,
      slug,
      description: emptyToNull(input.description),
      privacy: input.privacy ?? 'visible',
      isDefaultTeam: input.is_default_team ?? false,
      defaultMemberRole: input.default_member_role ?? 'member',
      membersCanCreatePipelines: input.members_can_create_pipelines ?? true,
      membersCanCreateSuites: input.members_can_create_suites ?? false,
      membersCanDestroySuites: input.members_can_destroy_suites ?? false,
      membersCanCreateRegistries: input.members_can_create_registries ?? false,
      membersCanDestroyRegistries: input.members_can_destroy_registries ?? false,
      membersCanDestroyPackages: input.members_can_destroy_packages ?? false,
    };
    await this.audited(
      caller,
      (teams) => teams.insert(fields),
      () => ({ type: 'TeamCreatedEvent', subject: teamSubject(fields), data: teamData(fields) }),
    );
    return (await this.teams.findById(caller.organization.id, id))!;
  }

  async update(caller: TeamCaller, idOrSlug: string, input: TeamInput): Promise<TeamRecord> {
    const team = await this.getManageable(caller, idOrSlug);
    const changes: Partial<TeamFields> = {
      description: input.description === undefined ? undefined : emptyToNull(input.description),
      privacy: input.privacy,
      isDefaultTeam: input.is_default_team,
      defaultMemberRole: input.default_member_role,
      membersCanCreatePipelines: input.members_can_create_pipelines,
      membersCanCreateSuites: input.members_can_create_suites,
      membersCanDestroySuites: input.members_can_destroy_suites,
      membersCanCreateRegistries: input.members_can_create_registries,
      membersCanDestroyRegistries: input.members_can_destroy_registries,
      membersCanDestroyPackages: input.members_can_destroy_packages,
    };
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) throw ValidationError.field('name', "can't be blank");
      const slug = slugify(name);
      if (!slug) throw ValidationError.field('name', 'must contain at least one letter or digit');
      changes.name = name;
      changes.slug = slug;
    }
    await this.audited(
      caller,
      (teams) => teams.update(team, changes),
      () => ({ type: 'TeamUpdatedEvent', subject: teamSubject({ ...team, ...definedOf(changes) }), data: teamData(changes) }),
    );
    return (await this.teams.findById(team.organizationId, team.id))!;
  }

  /** Admins only; the team's memberships and grants go with it. */
  async delete(caller: TeamCaller, idOrSlug: string): Promise<void> {
    const team = await this.get(caller, idOrSlug);
    if (!isAdmin(caller)) throw new ForbiddenError();
    await this.audited(
      caller,
      (teams) => teams.delete(team.id),
      () => ({ type: 'TeamDeletedEvent', subject: teamSubject(team), data: { name: team.name, slug: team.slug } }),
    );
  }

  // -- members

  async members(caller: TeamCaller, idOrSlug: string, offset: number, limit: number) {
    return this.teams.listMembers(await this.get(caller, idOrSlug), offset, limit);
  }

  async member(caller: TeamCaller, idOrSlug: string, userId: string): Promise<TeamMembership> {
    const team = await this.get(caller, idOrSlug);
    const m = isUuid(userId) ? await this.teams.findMember(team, userId) : null;
    if (!m) throw new NotFoundError('team member');
    return m;
  }

  /** `userIdOrEmail`: the API sends a UUID; the command line may name the user by email. */
  async addMember(caller: TeamCaller, idOrSlug: string, input: { user_id?: string; email?: string; role?: TeamRole }): Promise<TeamMembership> {
    const team = await this.getManageable(caller, idOrSlug);
    const field = input.email !== undefined ? 'email' : 'user_id';
    const member = await this.organizationMemberNamed(caller.organization.id, input);
    if (!member) throw ValidationError.field(field, 'is not a member of this organization');
    const role = input.role ?? team.defaultMemberRole;
    await this.audited(
      caller,
      async (teams) => {
        if (!(await teams.addMember(team.id, member.user.id, role, clock.now()))) throw ValidationError.field(field, 'is already a member of this team');
      },
      () => ({ type: 'TeamMemberCreatedEvent', subject: teamSubject(team), data: { user: userData(member.user), role } }),
    );
    return (await this.teams.findMember(team, member.user.id))!;
  }

  private async organizationMemberNamed(organizationId: string, input: { user_id?: string; email?: string }): Promise<OrganizationMembership | null> {
    if (input.email !== undefined) return this.teams.findOrganizationMemberByEmail(organizationId, input.email);
    const id = (input.user_id ?? '').trim();
    return isUuid(id) ? this.teams.findOrganizationMember(organizationId, id) : null;
  }

  async setMemberRole(caller: TeamCaller, idOrSlug: string, userId: string, role: TeamRole): Promise<TeamMembership> {
    const team = await this.getManageable(caller, idOrSlug);
    const m = isUuid(userId) ? await this.teams.findMember(team, userId) : null;
    if (!m) throw new NotFoundError('team member');
    await this.audited(
      caller,
      (teams) => teams.setMemberRole(team.id, m.user.id, role),
      () => ({ type: 'TeamMemberUpdatedEvent', subject: teamSubject(team), data: { user: userData(m.user), role } }),
    );
    return (await this.teams.findMember(team, m.user.id))!;
  }

  /** Managers remove anyone; a member may leave. */
  async removeMember(caller: TeamCaller, idOrSlug: string, userId: string): Promise<void> {
    const team = await this.get(caller, idOrSlug);
    const m = isUuid(userId) ? await this.teams.findMember(team, userId) : null;
    const self = m !== null && m.user.id === userIdOf(caller);
    if (!self && !isAdmin(caller) && (await this.roleIn(caller, team)) !== 'maintainer') throw new ForbiddenError();
    if (!m) throw new NotFoundError('team member');
    await this.audited(
      caller,
      (teams) => teams.removeMember(team.id, m.user.id),
      () => ({ type: 'TeamMemberDeletedEvent', subject: teamSubject(team), data: { user: userData(m.user) } }),
    );
  }

  // -- pipelines

  async pipelineGrants(actor: Actor, idOrSlug: string, offset: number, limit: number) {
    return this.teams.listPipelines((await this.get(actor, idOrSlug)).id, offset, limit);
  }

  async pipelineGrant(actor: Actor, idOrSlug: string, pipelineId: string): Promise<PipelineGrant> {
    const team = await this.get(actor, idOrSlug);
    const grant = isUuid(pipelineId) ? await this.teams.findPipelineGrant(team.id, pipelineId) : null;
    if (!grant) throw new NotFoundError('team pipeline');
    return grant;
  }

  /** A pipeline the caller may hand to or take from a team: one they manage themselves (admins manage all). */
  private async manageablePipeline(actor: Actor, pipelineId: string, field: string | null): Promise<string> {
    const id = pipelineId.trim().toLowerCase();
    const found = isUuid(id) ? (await this.pipelines.readableByIds(new Map([[actor.organization.id, actor]]), [id])).get(id) : undefined;
    if (!found) {
      if (field) throw ValidationError.field(field, 'is not a pipeline of this organization');
      throw new NotFoundError('team pipeline');
    }
    if (!found.perms.edit) throw new ForbiddenError();
    return found.pipeline.id;
  }

  async addPipeline(actor: Actor, idOrSlug: string, input: { pipeline_id: string; access_level?: PipelineAccessLevel }): Promise<PipelineGrant> {
    const team = await this.getManageable(actor, idOrSlug);
    const pipelineId = await this.manageablePipeline(actor, input.pipeline_id, 'pipeline_id');
    const accessLevel = input.access_level ?? 'manage_build_and_read';
    await this.audited(
      actor,
      async (teams) => {
        if (!(await teams.addPipelineGrant(team.id, pipelineId, accessLevel, clock.now())))
          throw ValidationError.field('pipeline_id', 'has already been added to this team');
      },
      () => ({ type: 'TeamPipelineCreatedEvent', subject: teamSubject(team), data: { pipeline_id: pipelineId, access_level: accessLevel } }),
    );
    return (await this.teams.findPipelineGrant(team.id, pipelineId))!;
  }

  async setPipelineAccess(actor: Actor, idOrSlug: string, pipelineId: string, accessLevel: PipelineAccessLevel): Promise<PipelineGrant> {
    const team = await this.getManageable(actor, idOrSlug);
    const grant = await this.pipelineGrant(actor, team.id, pipelineId);
    await this.manageablePipeline(actor, grant.pipelineId, null);
    await this.audited(
      actor,
      (teams) => teams.setPipelineAccess(team.id, grant.pipelineId, accessLevel),
      () => ({ type: 'TeamPipelineUpdatedEvent', subject: teamSubject(team), data: { pipeline_id: grant.pipelineId, access_level: accessLevel } }),
    );
    return (await this.teams.findPipelineGrant(team.id, grant.pipelineId))!;
  }

  async removePipeline(actor: Actor, idOrSlug: string, pipelineId: string): Promise<void> {
    const team = await this.getManageable(actor, idOrSlug);
    const grant = await this.pipelineGrant(actor, team.id, pipelineId);
    await this.manageablePipeline(actor, grant.pipelineId, null);
    await this.audited(
      actor,
      (teams) => teams.removePipelineGrant(team.id, grant.pipelineId),
      () => ({ type: 'TeamPipelineDeletedEvent', subject: teamSubject(team), data: { pipeline_id: grant.pipelineId } }),
    );
  }

  // -- suites

  async suiteGrants(actor: Actor, idOrSlug: string, offset: number, limit: number) {
    return this.teams.listSuites((await this.get(actor, idOrSlug)).id, offset, limit);
  }

  async suiteGrant(actor: Actor, idOrSlug: string, suiteId: string): Promise<SuiteGrant> {
    const team = await this.get(actor, idOrSlug);
    const grant = isUuid(suiteId) ? await this.teams.findSuiteGrant(team.id, suiteId) : null;
    if (!grant) throw new NotFoundError('team suite');
    return grant;
  }

  private async editableSuite(actor: Actor, suiteId: string, field: string | null): Promise<string> {
    const found = await this.suites.forGrant(actor, suiteId.trim());
    if (!found) {
      if (field) throw ValidationError.field(field, 'is not a suite of this organization');
      throw new NotFoundError('team suite');
    }
    if (!found.editable) throw new ForbiddenError();
    return found.suite.id;
  }

  async addSuite(actor: Actor, idOrSlug: string, input: { suite_id: string; access_level?: string[] }): Promise<SuiteGrant> {
    const team = await this.getManageable(actor, idOrSlug);
    const suiteId = await this.editableSuite(actor, input.suite_id, 'suite_id');
    const level = suiteLevel(input.access_level);
    await this.audited(
      actor,
      async (teams) => {
        if (!(await teams.addSuiteGrant(team.id, suiteId, level, clock.now()))) throw ValidationError.field('suite_id', 'has already been added to this team');
      },
      () => ({ type: 'TeamSuiteCreatedEvent', subject: teamSubject(team), data: { suite_id: suiteId, access_level: level } }),
    );
    return (await this.teams.findSuiteGrant(team.id, suiteId))!;
  }

  async setSuiteAccess(actor: Actor, idOrSlug: string, suiteId: string, accessLevel: string[]): Promise<SuiteGrant> {
    const team = await this.getManageable(actor, idOrSlug);
    const grant = await this.suiteGrant(actor, team.id, suiteId);
    await this.editableSuite(actor, grant.suiteId, null);
    const level = suiteLevel(accessLevel);
    await this.audited(
      actor,
      (teams) => teams.setSuiteAccess(team.id, grant.suiteId, level),
      () => ({ type: 'TeamSuiteUpdatedEvent', subject: teamSubject(team), data: { suite_id: grant.suiteId, access_level: level } }),
    );
    return (await this.teams.findSuiteGrant(team.id, grant.suiteId))!;
  }

  async removeSuite(actor: Actor, idOrSlug: string, suiteId: string): Promise<void> {
    const team = await this.getManageable(actor, idOrSlug);
    const grant = await this.suiteGrant(actor, team.id, suiteId);
    await this.editableSuite(actor, grant.suiteId, null);
    await this.audited(
      actor,
      (teams) => teams.removeSuiteGrant(team.id, grant.suiteId),
      () => ({ type: 'TeamSuiteDeletedEvent', subject: teamSubject(team), data: { suite_id: grant.suiteId } }),
    );
  }

  // -- organization members

  async organizationMembers(caller: TeamCaller, offset: number, limit: number) {
    return this.teams.listOrganizationMembers(caller.organization.id, offset, limit);
  }

  async organizationMember(caller: TeamCaller, userId: string): Promise<OrganizationMembership> {
    const m = isUuid(userId) ? await this.teams.findOrganizationMember(caller.organization.id, userId) : null;
    if (!m) throw new NotFoundError('organization member');
    return m;
  }

  /** Whether the caller sees a member's `sso_mode`: admins, and each member in their own membership. */
  showsSsoMode(caller: TeamCaller, m: OrganizationMembership): boolean {
    return isAdmin(caller) || m.user.id === userIdOf(caller);
  }

  async updateOrganizationMember(caller: TeamCaller, userId: string, input: { role?: Role; sso_mode?: SsoMode }): Promise<OrganizationMembership> {
    const m = await this.organizationMember(caller, userId);
    if (!isAdmin(caller) || m.user.id === userIdOf(caller)) throw new ForbiddenError();
    if (input.role === undefined && input.sso_mode === undefined) {
      throw new ValidationError([{ field: 'role', code: "can't be blank: send a role or an sso_mode" }]);
    }
    await this.audited(
      caller,
      async (teams) => {
        if (m.role === 'admin' && input.role === 'member' && (await teams.countAdmins(caller.organization.id)) <= 1) {
          throw ValidationError.field('role', 'would leave the organization without an admin');
        }
        await teams.updateOrganizationMember(caller.organization.id, m.user.id, { role: input.role, ssoMode: input.sso_mode });
      },
      () => ({ type: 'OrganizationMemberUpdatedEvent', subject: userSubject(m.user), data: { role: input.role, sso_mode: input.sso_mode } }),
    );
    return this.organizationMember(caller, m.user.id);
  }

  async removeOrganizationMember(caller: TeamCaller, userId: string): Promise<void> {
    const m = await this.organizationMember(caller, userId);
    if (!isAdmin(caller)) throw new ForbiddenError();
    await this.audited(
      caller,
      async (teams) => {
        if (m.role === 'admin' && (await teams.countAdmins(caller.organization.id)) <= 1) {
          throw new ValidationError([{ field: 'user_id', code: 'is the last admin: the organization would be left without one' }]);
        }
        await teams.removeOrganizationMember(caller.organization.id, m.user.id);
      },
      () => ({ type: 'OrganizationMemberDeletedEvent', subject: userSubject(m.user), data: { role: m.role } }),
    );
  }
}

/** `["read"]` is read; any list with `edit` is edit (edit includes read). */
function suiteLevel(levels: string[] | undefined): SuiteAccessLevel {
  return levels === undefined || levels.includes('edit') ? 'edit' : 'read';
}

function emptyToNull(s: string | null | undefined): string | null {
  return s === undefined || s === null || s.trim() === '' ? null : s;
}

const teamSubject = (t: { id: string; name: string }) => ({ type: 'Team', id: t.id, name: t.name });
const userSubject = (u: { id: string; name: string }) => ({ type: 'User', id: u.id, name: u.name });
const userData = (u: { id: string; name: string; email: string }) => ({ id: u.id, name: u.name, email: u.email });

function definedOf<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = { ...o };
  for (const key in out) if (out[key] === undefined) delete out[key];
  return out;
}

/** A team's fields as the API names them, for the audit log: only those given. */
function teamData(f: Partial<TeamFields>): Record<string, unknown> {
  return definedOf({
    name: f.name,
    slug: f.slug,
    description: f.description,
    privacy: f.privacy,
    is_default_team: f.isDefaultTeam,
    default_member_role: f.defaultMemberRole,
    members_can_create_pipelines: f.membersCanCreatePipelines,
    members_can_create_suites: f.membersCanCreateSuites,
    members_can_destroy_suites: f.membersCanDestroySuites,
    members_can_create_registries: f.membersCanCreateRegistries,
    members_can_destroy_registries: f.membersCanDestroyRegistries,
    members_can_destroy_packages: f.membersCanDestroyPackages,
  });
}
