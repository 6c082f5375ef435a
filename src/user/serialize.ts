import type { components } from '../../generated/api';
import type { User } from '../core/identity';
import { graphqlId, gravatarUrl, isoTime } from '../http/responses/format';

export function serializeUser(u: User): components['schemas']['User'] {
  return {
    id: u.id,
    graphql_id: graphqlId('User', u.id),
    name: u.name,
    email: u.email,
    avatar_url: gravatarUrl(u.email),
    created_at: isoTime(u.createdAt),
  };
}

/** A user as builds, jobs, agents and agent tokens name one (their `creator`, `unblocked_by`...), or null. */
export function serializeCreator(u: User | null): components['schemas']['User'] | null {
  return u ? serializeUser(u) : null;
}
