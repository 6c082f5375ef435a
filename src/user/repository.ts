/** Users: rows in, domain objects out. */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Role, User } from '../core/identity';
import { ROLES, userFromRow } from './rows';
import type { OrganizationMembersRow, OrganizationsRow, UsersRow } from '../db/tables';

/** A user as `listWithMemberships` selects it, once per organization it is a member of (nulls: none). */
type UserMembershipRow = Pick<UsersRow, 'id' | 'name' | 'email' | 'created_at'> &
  Nullable<Pick<OrganizationMembersRow, 'role'> & Pick<OrganizationsRow, 'slug'>>;
import { clock } from '../core/clock';
import { type Nullable, oneOf } from '../db/row-types';

export class UserRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): UserRepository {
    return new UserRepository(trx);
  }

  async create(input: { name: string; email: string }, trx: Knex = this.db): Promise<User> {
    const user: User = { id: crypto.randomUUID(), name: input.name, email: input.email.toLowerCase(), createdAt: clock.now() };
    await trx('users').insert({ id: user.id, name: user.name, email: user.email, created_at: user.createdAt });
    return user;
  }

  async findByEmail(email: string, trx: Knex = this.db): Promise<User | null> {
    const row = await trx('users').where({ email: email.toLowerCase() }).first();
    return row ? userFromRow(row) : null;
  }

  async findById(id: string, trx: Knex = this.db): Promise<User | null> {
    const row = await trx('users').where({ id }).first();
    return row ? userFromRow(row) : null;
  }

  /**
   * Users by email with the organizations they are members of (slug and role), for the command
   * line's `user list`; `organizationId`: only that organization's members.
   */
  async listWithMemberships(organizationId?: string, trx: Knex = this.db): Promise<{ user: User; memberships: { slug: string; role: Role }[] }[]> {
    const q = trx('users as u')
      .leftJoin('organization_members as m', 'm.user_id', 'u.id')
      .leftJoin('organizations as o', 'o.id', 'm.organization_id')
      .orderBy([{ column: 'u.email' }, { column: 'o.slug' }])
      .select<UserMembershipRow[]>('u.id', 'u.name', 'u.email', 'u.created_at', 'm.role', 'o.slug');
    if (organizationId) q.whereIn('u.id', trx('organization_members').where({ organization_id: organizationId }).select('user_id'));
    const listed = new Map<string, { user: User; memberships: { slug: string; role: Role }[] }>();
    for (const row of await q) {
      const entry = listed.get(row.id) ?? { user: userFromRow(row), memberships: [] };
      listed.set(row.id, entry);
      if (row.slug) entry.memberships.push({ slug: row.slug, role: oneOf(ROLES, row.role, 'organization_members.role') });
    }
    return [...listed.values()];
  }
}
