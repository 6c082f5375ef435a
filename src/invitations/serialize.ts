/** An invitation -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import type { User } from '../core/identity';
import { graphqlId, isoTime } from '../http/responses/format';
import type { ShownInvitation } from './service';

const user = (u: User | null): components['schemas']['InvitationUser'] | null => (u ? { id: u.id, name: u.name, email: u.email } : null);

export function serializeInvitation(i: ShownInvitation, orgSlug: string, publicUrl: string): components['schemas']['Invitation'] {
  return {
    id: i.id,
    graphql_id: graphqlId('OrganizationInvitation', i.id),
    url: `${publicUrl}/v2/organizations/${orgSlug}/invitations/${i.id}`,
    email: i.email,
    state: i.state,
    role: i.role,
    sso_mode: i.ssoMode,
    teams: i.teams.map((t) => ({ id: t.id, graphql_id: graphqlId('Team', t.id), slug: t.slug, role: t.role })),
    created_at: isoTime(i.createdAt),
    created_by: user(i.createdBy),
    accepted_at: i.acceptedAt ? isoTime(i.acceptedAt) : null,
    accepted_by: user(i.acceptedBy),
    revoked_at: i.revokedAt ? isoTime(i.revokedAt) : null,
    revoked_by: user(i.revokedBy),
    expired_at: null,
  };
}
