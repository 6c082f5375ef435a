/** Users: rows in, domain objects out. */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Role, User } from '../core/identity';
import { userFromRow } from './rows';

export class UserRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): UserRepository {
    return new UserRepository(trx);
  }

  async create(input: { name: string; email: string }, trx: Knex = this.db): Promise<User> {
    const user: User = { id: crypto.randomUUID(), name: input.name, email: input.email.toLowerCase(), createdAt: new Date() };
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
    const users = trx('users').orderBy('email').select('id', 'name', 'email', 'created_at');
    if (organizationId) users.whereIn('id', trx('organization_members').where({ organization_id: organizationId }).select('user_id'));
    const rows = await users;
    const memberships = await trx('organization_members as m')
      .join('organizations as o', 'o.id', 'm.organization_id')
      .whereIn(
        'm.user_id',
        rows.map((r) => r.id),
      )
      .orderBy('o.slug')
      .select('m.user_id', 'm.role', 'o.slug');
    return rows.map((row) => ({
      user: userFromRow(row),
      memberships: memberships.filter((m) => m.user_id === row.id).map((m) => ({ slug: m.slug as string, role: m.role as Role })),
    }));
  }
}
