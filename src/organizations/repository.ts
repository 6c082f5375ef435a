/** Organizations, memberships and teams: rows in, domain objects out. */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { toBool, toDate } from '../db/values';
import type { Organization, Role } from '../core/identity';

export interface Team {
  id: string;
  organizationId: string;
  slug: string;
  name: string;
}

export function orgFromRow(row: Record<string, unknown>): Organization {
  return {
    id: row.id as string,
    slug: row.slug as string,
    name: row.name as string,
    teamsEnabled: toBool(row.teams_enabled),
    createdAt: toDate(row.created_at),
  };
}

function teamFromRow(row: Record<string, unknown>): Team {
  return { id: row.id as string, organizationId: row.organization_id as string, slug: row.slug as string, name: row.name as string };
}

export class OrganizationRepository {
  constructor(private readonly db: Knex) {}

  async create(input: { slug: string; name: string; teamsEnabled?: boolean }, trx: Knex = this.db): Promise<Organization> {
    const org: Organization = {
      id: crypto.randomUUID(),
      slug: input.slug,
      name: input.name,
      teamsEnabled: input.teamsEnabled ?? false,
      createdAt: new Date(),
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

  async count(trx: Knex = this.db): Promise<number> {
    const row = await trx('organizations').count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async findBySlug(slug: string, trx: Knex = this.db): Promise<Organization | null> {
    const row = await trx('organizations').where({ slug }).first();
    return row ? orgFromRow(row) : null;
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

  async addMember(organizationId: string, userId: string, role: Role, trx: Knex = this.db): Promise<void> {
    await trx('organization_members')
      .insert({ organization_id: organizationId, user_id: userId, role })
      .onConflict(['organization_id', 'user_id'])
      .merge({ role });
  }

  /** The user's memberships: organization id -> role. */
  async membershipsOf(userId: string, trx: Knex = this.db): Promise<Map<string, Role>> {
    const rows = await trx('organization_members').where({ user_id: userId }).select('organization_id', 'role');
    return new Map(rows.map((r) => [r.organization_id as string, r.role as Role]));
  }

  async createTeam(input: { organizationId: string; slug: string; name: string }, trx: Knex = this.db): Promise<Team> {
    const team: Team = { id: crypto.randomUUID(), ...input };
    await trx('teams').insert({ id: team.id, organization_id: team.organizationId, slug: team.slug, name: team.name, created_at: new Date() });
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

  async addTeamMember(teamId: string, userId: string, trx: Knex = this.db): Promise<void> {
    await trx('team_members').insert({ team_id: teamId, user_id: userId }).onConflict(['team_id', 'user_id']).ignore();
  }

  async teamIdsOf(userId: string, organizationId: string, trx: Knex = this.db): Promise<Set<string>> {
    const rows = await trx('team_members')
      .join('teams', 'teams.id', 'team_members.team_id')
      .where({ 'team_members.user_id': userId, 'teams.organization_id': organizationId })
      .select('teams.id');
    return new Set(rows.map((r) => r.id as string));
  }
}
