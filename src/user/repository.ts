/** Users: rows in, domain objects out. */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { User } from '../core/identity';
import { userFromRow } from './rows';
import { clock } from '../core/clock';

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
}
