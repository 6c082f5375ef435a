/** A user row (also as other areas' queries select it, with these column names) into a User. */
import type { User } from '../core/identity';
import { toDate } from '../db/values';

export function userFromRow(row: { id: string; name: string; email: string; created_at: unknown }): User {
  return { id: row.id, name: row.name, email: row.email, createdAt: toDate(row.created_at) };
}
