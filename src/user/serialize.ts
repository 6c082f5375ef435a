import type { components } from '../../generated/api';
import { graphqlId, gravatarUrl, isoTime } from '../http/format';

export interface User {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
}

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
