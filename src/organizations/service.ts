/**
 * Organizations as other areas and the routes ask about them: the ones a caller may see, one by
 * id, whether a user is a member, and which of the teams a write names the caller may use. No
 * HTTP, no SQL.
 */
import type { AuditLog } from '../audit/service';
import { ForbiddenError, ValidationError, type FieldError } from '../core/errors';
import type { Knex } from 'knex';
import type { Actor, Organization, Principal, Role, User } from '../core/identity';
import { isUuid } from '../core/uuid';
import { normalizeAllowedIps, parseAllowedIps } from '../security/allowed-ips';
import type { ApiSettings, OrganizationRepository, PipelineSettings, PipelineSettingSwitchName, Team, TeamRole } from './repository';
import { clock } from '../core/clock';

/** 403 for build data export, which Windsock does not offer. */
export class BuildExportUnavailableError extends ForbiddenError {
  constructor() {
    super();
    this.message = "Build data export isn't available on this Windsock installation";
  }
}

/** The documented periods after which an unused token is revoked. */
export const REVOKE_AFTER_DAYS = [30, 60, 90, 180, 365];

export interface PipelineSettingsInput {
  default_branch?: string | null;
  default_cluster_id?: string | null;
  default_timeout_in_minutes?: number | null;
  maximum_timeout_in_minutes?: number | null;
  scheduled_job_expiry_in_minutes?: number | null;
}

const SWITCH_EVENTS: Record<PipelineSettingSwitchName, string> = {
  hosted_agents_ssh: 'OrganizationHostedAgentsTerminalAccess',
  public_pipelines: 'OrganizationPublicPipelineCreation',
  advanced_queue_metrics: 'OrganizationAdvancedQueueMetrics',
};

export interface ApiSettingsInput {
  allowed_ip_addresses?: string | null;
  revoke_inactive_tokens_after_days?: number | null;
  restrict_user_api_token_creation?: boolean;
}

/** A team a write named, or why it can't be used. */
export type TeamCheck = { team: Team } | { code: string };

export class OrganizationService {
  /**
   * Each organization's API IP allow-list for `allowListCacheMs` (real time), so the guard of
   * every request does not read it: a change through this process applies at once (the entry is
   * dropped), one made by another process (a second worker) within the window, as for tokens.
   */
  private readonly allowLists = new Map<string, { value: string | null; until: number }>();
  allowListCacheMs = 1000;

  constructor(
    private readonly orgs: OrganizationRepository,
    private readonly audit: AuditLog,
  ) {}

  private static requireAdmin(actor: Actor): void {
    if (actor.role !== 'admin') throw new ForbiddenError();
  }

  /** The organization's API settings; administrators only. */
  async apiSettings(actor: Actor): Promise<ApiSettings> {
    OrganizationService.requireAdmin(actor);
    return this.orgs.apiSettings(actor.organization.id);
  }

  /** Changes the fields sent (checked first: a 422 names each one at fault), recorded in the audit log in the same transaction. */
  async updateApiSettings(actor: Actor, input: ApiSettingsInput): Promise<ApiSettings> {
    OrganizationService.requireAdmin(actor);
    const errors: FieldError[] = [];
    const patch: Partial<ApiSettings> = {};
    if (input.allowed_ip_addresses !== undefined) {
      const value = input.allowed_ip_addresses === null ? '' : normalizeAllowedIps(input.allowed_ip_addresses);
      const { invalid } = parseAllowedIps(value);
      if (invalid.length)
        errors.push({ field: 'allowed_ip_addresses', code: `must be CIDR ranges separated by spaces (not ${invalid.slice(0, 3).join(', ')})` });
      else patch.allowedIpAddresses = value || null;
    }
    if (input.revoke_inactive_tokens_after_days !== undefined) {
      const days = input.revoke_inactive_tokens_after_days;
      if (days !== null && !REVOKE_AFTER_DAYS.includes(days))
        errors.push({ field: 'revoke_inactive_tokens_after_days', code: `must be one of ${REVOKE_AFTER_DAYS.join(', ')} or null` });
      else patch.revokeInactiveTokensAfterDays = days;
    }
    if (input.restrict_user_api_token_creation !== undefined) patch.restrictUserApiTokenCreation = input.restrict_user_api_token_creation;
    if (errors.length) throw new ValidationError(errors);
    const org = actor.organization;
    const updated = await this.audit.transaction(
      actor,
      async (trx) => {
        await this.orgs.updateApiSettings(org.id, patch, trx);
        return this.orgs.apiSettings(org.id, trx);
      },
      () => ({
        type: 'OrganizationApiSettingsUpdatedEvent',
        subject: { type: 'Organization', id: org.id, name: org.name },
        data: {
          ...(patch.allowedIpAddresses !== undefined ? { allowed_ip_addresses: patch.allowedIpAddresses } : {}),
          ...(patch.revokeInactiveTokensAfterDays !== undefined ? { revoke_inactive_tokens_after_days: patch.revokeInactiveTokensAfterDays } : {}),
          ...(patch.restrictUserApiTokenCreation !== undefined ? { restrict_user_api_token_creation: patch.restrictUserApiTokenCreation } : {}),
        },
      }),
    );
    // After the commit: a request that read the old list meanwhile cannot keep it cached.
    this.allowLists.delete(org.id);
    return updated;
  }

  /** The organization's pipeline settings; administrators only. */
  async pipelineSettings(actor: Actor): Promise<PipelineSettings> {
    OrganizationService.requireAdmin(actor);
    return this.orgs.pipelineSettings(actor.organization.id);
  }

  /** The defaults a new pipeline of the organization takes (the pipelines' service asks, for any caller). */
  async pipelineDefaults(organizationId: string): Promise<PipelineSettings> {
    return this.orgs.pipelineSettings(organizationId);
  }

  async updatePipelineSettings(actor: Actor, input: PipelineSettingsInput): Promise<PipelineSettings> {
    OrganizationService.requireAdmin(actor);
    const org = actor.organization;
    const errors: FieldError[] = [];
    const patch: Partial<Omit<PipelineSettings, 'switches'>> = {};
    if (input.default_branch !== undefined) {
      const branch = input.default_branch?.trim() ?? '';
      if (/\s|\.\.|^-|[~^:?*[\\]/.test(branch)) errors.push({ field: 'default_branch', code: 'is not a valid branch name' });
      else patch.defaultBranch = branch || null;
    }
    if (input.default_cluster_id !== undefined) {
      const id = input.default_cluster_id?.trim() || null;
      if (id !== null && !(isUuid(id) && (await this.orgs.hasCluster(org.id, id))))
        errors.push({ field: 'default_cluster_id', code: 'is not a cluster of this organization' });
      else patch.defaultClusterId = id?.toLowerCase() ?? null;
    }
    if (input.default_timeout_in_minutes !== undefined) patch.defaultTimeoutInMinutes = input.default_timeout_in_minutes;
    if (input.maximum_timeout_in_minutes !== undefined) patch.maximumTimeoutInMinutes = input.maximum_timeout_in_minutes;
    if (input.scheduled_job_expiry_in_minutes !== undefined) patch.scheduledJobExpiryInMinutes = input.scheduled_job_expiry_in_minutes;
    const current = await this.orgs.pipelineSettings(org.id);
    const def = patch.defaultTimeoutInMinutes !== undefined ? patch.defaultTimeoutInMinutes : current.defaultTimeoutInMinutes;
    const max = patch.maximumTimeoutInMinutes !== undefined ? patch.maximumTimeoutInMinutes : current.maximumTimeoutInMinutes;
    if (def !== null && max !== null && def > max)
      errors.push({ field: 'default_timeout_in_minutes', code: `must not be greater than maximum_timeout_in_minutes (${max})` });
    if (errors.length) throw new ValidationError(errors);
    return this.audit.transaction(
      actor,
      async (trx) => {
        await this.orgs.updatePipelineSettings(org.id, patch, trx);
        return this.orgs.pipelineSettings(org.id, trx);
      },
      () => ({
        type: 'OrganizationPipelineSettingsUpdatedEvent',
        subject: { type: 'Organization', id: org.id, name: org.name },
        data: Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
      }),
    );
  }

  /** Turns a pipeline settings switch on or off; a change is recorded in the audit log, a no-op is not. */
  async setPipelineSettingSwitch(actor: Actor, name: PipelineSettingSwitchName, on: boolean): Promise<PipelineSettings> {
    OrganizationService.requireAdmin(actor);
    const org = actor.organization;
    const current = await this.orgs.pipelineSettings(org.id);
    if ((current.switches[name].enabledAt !== null) === on) return current;
    return this.audit.transaction(
      actor,
      async (trx) => {
        await this.orgs.setPipelineSettingSwitch(org.id, name, on ? { at: clock.now(), userId: actor.principal.user.id } : null, trx);
        return this.orgs.pipelineSettings(org.id, trx);
      },
      () => ({
        type: `${SWITCH_EVENTS[name]}${on ? 'Enabled' : 'Disabled'}Event`,
        subject: { type: 'Organization', id: org.id, name: org.name },
        data: { [name]: on },
      }),
    );
  }

  /** Build data export is not available here: a 403, as the real API answers a plan without it. */
  buildExportUnavailable(actor: Actor): never {
    OrganizationService.requireAdmin(actor);
    throw new BuildExportUnavailableError();
  }

  /** The API IP allow-list every request with a token must come from (null: any address); see `allowLists`. */
  async allowedIpAddresses(organizationId: string): Promise<string | null> {
    const now = Date.now();
    const cached = this.allowLists.get(organizationId);
    if (cached && cached.until > now) return cached.value;
    const value = await this.orgs.allowedIpAddresses(organizationId);
    if (this.allowListCacheMs > 0) {
      if (this.allowLists.size >= 10_000) this.allowLists.delete(this.allowLists.keys().next().value!);
      this.allowLists.set(organizationId, { value, until: now + this.allowListCacheMs });
    }
    return value;
  }

  /**
   * Turns teams on (administrators only), with an "Everyone" team of every member, pipeline and
   * suite when the organization has no team, as the docs' enable does; already on, nothing changes
   * and nothing is recorded.
   */
  async enableTeams(actor: Actor): Promise<void> {
    OrganizationService.requireAdmin(actor);
    const org = (await this.orgs.findById(actor.organization.id))!;
    if (org.teamsEnabled) return;
    await this.audit.transaction(
      actor,
      async (trx) => {
        await this.orgs.enableTeams(org.id, trx);
        return this.orgs.createEveryoneTeam(org.id, trx);
      },
      (everyone) => ({
        type: 'OrganizationTeamsEnabledEvent',
        subject: { type: 'Organization', id: org.id, name: org.name },
        data: { teams_enabled: true, ...(everyone && { everyone_team_created: true }) },
      }),
    );
  }

  /** A page of the principal's organizations by name, and how many there are. */
  async list(principal: Principal, offset: number, limit: number): Promise<{ items: Organization[]; total: number }> {
    return this.orgs.pageByIds([...principal.organizations.keys()], offset, limit);
  }

  async findById(id: string): Promise<Organization | null> {
    return this.orgs.findById(id);
  }

  /** The slugs of the organization's teams among `ids` (UUIDs), by id as given; ids of no team of it are left out. */
  async teamSlugsIn(organizationId: string, ids: string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const id of ids) {
      const team = isUuid(id) ? await this.orgs.findTeam(organizationId, id) : null;
      if (team && team.id === id.toLowerCase()) found.set(id, team.slug);
    }
    return found;
  }

  /** Makes the user a member (with `role`, and of the default teams) and of `teams`, on the caller's transaction. */
  async join(organizationId: string, userId: string, role: Role, teams: { id: string; role: TeamRole }[], trx: Knex): Promise<void> {
    await this.orgs.addMember(organizationId, userId, role, trx);
    for (const t of teams) {
      if (await this.orgs.findTeam(organizationId, t.id, trx)) await this.orgs.addTeamMember(t.id, userId, trx, t.role);
    }
  }

  /** Whether the user is a member of one of the organization's teams named (by id or slug). */
  async memberOfAnyTeam(organizationId: string, userId: string, idsOrSlugs: readonly string[]): Promise<boolean> {
    const memberOf = await this.orgs.teamRolesOf(userId, organizationId);
    for (const id of idsOrSlugs) {
      const team = await this.orgs.findTeam(organizationId, id);
      if (team && memberOf.has(team.id)) return true;
    }
    return false;
  }

  /** The user, if a member of the organization. */
  async member(organizationId: string, userId: string): Promise<User | null> {
    return this.orgs.findMember(organizationId, userId);
  }

  /**
   * The teams (by id or slug) a pipeline or suite write names, in order: each must be a team of
   * the actor's organization and, unless the actor is an admin, one the actor is a member of.
   */
  async checkTeams(actor: Actor, idsOrSlugs: string[], opts: { creatingPipeline?: boolean } = {}): Promise<TeamCheck[]> {
    const memberOf = actor.role === 'admin' ? null : await this.orgs.teamRolesOf(actor.principal.user.id, actor.organization.id);
    const checks: TeamCheck[] = [];
    for (const id of idsOrSlugs) {
      const team = await this.orgs.findTeam(actor.organization.id, id);
      if (!team) checks.push({ code: `is not a team of this organization (${id})` });
      else if (memberOf && !memberOf.has(team.id)) checks.push({ code: `you are not a member of this team (${id})` });
      // A team's `members_can_create_pipelines` off leaves creating pipelines in it to its maintainers (and admins).
      else if (memberOf && opts.creatingPipeline && !team.membersCanCreatePipelines && memberOf.get(team.id) !== 'maintainer') {
        checks.push({ code: `members of this team can't create pipelines in it (${id})` });
      } else checks.push({ team });
    }
    return checks;
  }
}
