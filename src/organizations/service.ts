/**
 * Organizations as other areas and the routes ask about them: the ones a caller may see, one by
 * id, whether a user is a member, and which of the teams a write names the caller may use. No
 * HTTP, no SQL.
 */
import type { Actor, Organization, Principal, User } from '../core/identity';
import type { OrganizationRepository, Team } from './repository';

/** A team a write named, or why it can't be used. */
export type TeamCheck = { team: Team } | { code: string };

export class OrganizationService {
  constructor(private readonly orgs: OrganizationRepository) {}

  /** A page of the principal's organizations by name, and how many there are. */
  async list(principal: Principal, offset: number, limit: number): Promise<{ items: Organization[]; total: number }> {
    return this.orgs.pageByIds([...principal.organizations.keys()], offset, limit);
  }

  async findById(id: string): Promise<Organization | null> {
    return this.orgs.findById(id);
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
