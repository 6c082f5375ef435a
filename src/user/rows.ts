/** A user row (also as other areas' queries select it, with these column names) into a User. */
import type { Role, User } from '../core/identity';
import { toDate } from '../db/values';
import { keysOf } from '../db/row-types';

/** Every Role, to check a role column against (`oneOf(ROLES, r.role, ...)`). */
export const ROLES: readonly Role[] = keysOf<Role>({ admin: true, member: true });

export function userFromRow(row: { id: string; name: string; email: string; created_at: unknown }): User {
  return { id: row.id, name: row.name, email: row.email, createdAt: toDate(row.created_at) };
}

/** A user as a left join selects it (`u.id as creator_id`...): null when the join found none. */
export function joinedUser(id: string | null | undefined, name: string | null | undefined, email: string | null | undefined, createdAt: unknown): User | null {
  return id != null && name != null && email != null ? userFromRow({ id, name, email, created_at: createdAt }) : null;
}
