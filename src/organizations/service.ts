/** The organizations a caller may see: those its token names and its user is a member of. No HTTP, no SQL. */
import type { Organization, Principal } from '../core/identity';
import type { OrganizationRepository } from './repository';

export class OrganizationService {
  constructor(private readonly orgs: OrganizationRepository) {}

  /** A page of the principal's organizations by name, and how many there are. */
  async list(principal: Principal, offset: number, limit: number): Promise<{ items: Organization[]; total: number }> {
    return this.orgs.pageByIds([...principal.organizations.keys()], offset, limit);
  }
}
