/** An organization's invitations: rows in, domain objects out. */
import { keysetQuery, keysetRows, type KeysetPage } from '../db/keyset';
import type { Knex } from 'knex';
import type { User } from '../core/identity';
import { toDate, toDateOrNull } from '../db/values';
import type { OrganizationInvitationsRow, UsersRow } from '../db/tables';
import { joinedUser } from '../user/rows';
import { type Nullable, type Prefixed, isOneOf, jsonColumn, oneOf } from '../db/row-types';
import { isRecord } from '../core/guards';

const INVITATION_STATES = ['pending', 'accepted', 'revoked', 'expired'] as const;
const INVITATION_ROLES = ['admin', 'member'] as const;
const INVITATION_SSO_MODES = ['required', 'optional'] as const;
const INVITATION_TEAM_ROLES = ['member', 'maintainer'] as const;
export type InvitationState = (typeof INVITATION_STATES)[number];
export type InvitationRole = (typeof INVITATION_ROLES)[number];
export type InvitationSsoMode = (typeof INVITATION_SSO_MODES)[number];
export type InvitationTeam = { id: string; role: (typeof INVITATION_TEAM_ROLES)[number] };

export interface Invitation {
  id: string;
  organizationId: string;
  email: string;
  role: InvitationRole;
  ssoMode: InvitationSsoMode;
  teams: InvitationTeam[];
  state: InvitationState;
  createdAt: Date;
  createdBy: User | null;
  acceptedAt: Date | null;
  acceptedBy: User | null;
  revokedAt: Date | null;
  revokedBy: User | null;
}

const USERS = ['created_by', 'accepted_by', 'revoked_by'] as const;

/** The columns `select()` reads of each of the `USERS` (its id is the invitation's `<user>_id`). */
type JoinedUser<P extends string> = Nullable<Prefixed<Pick<UsersRow, 'name' | 'email' | 'created_at'>, P>>;
type InvitationJoinRow = OrganizationInvitationsRow & JoinedUser<'created_by_'> & JoinedUser<'accepted_by_'> & JoinedUser<'revoked_by_'>;

function isInvitationTeams(v: unknown): v is InvitationTeam[] {
  return Array.isArray(v) && v.every((t) => isRecord(t) && typeof t.id === 'string' && isOneOf(INVITATION_TEAM_ROLES, t.role));
}

function fromRow(r: InvitationJoinRow): Invitation {
  return {
    id: r.id,
    organizationId: r.organization_id,
    email: r.email,
    role: oneOf(INVITATION_ROLES, r.role, 'organization_invitations.role'),
    ssoMode: oneOf(INVITATION_SSO_MODES, r.sso_mode, 'organization_invitations.sso_mode'),
    teams: jsonColumn(r.teams, [], isInvitationTeams, 'organization_invitations.teams'),
    state: oneOf(INVITATION_STATES, r.state, 'organization_invitations.state'),
    createdAt: toDate(r.created_at),
    createdBy: joinedUser(r.created_by_id, r.created_by_name, r.created_by_email, r.created_by_created_at),
    acceptedAt: toDateOrNull(r.accepted_at),
    acceptedBy: joinedUser(r.accepted_by_id, r.accepted_by_name, r.accepted_by_email, r.accepted_by_created_at),
    revokedAt: toDateOrNull(r.revoked_at),
    revokedBy: joinedUser(r.revoked_by_id, r.revoked_by_name, r.revoked_by_email, r.revoked_by_created_at),
  };
}

export class InvitationRepository {
  constructor(private readonly db: Knex) {}

  private select(trx: Knex) {
    let q = trx('organization_invitations as i');
    const columns = ['i.*'];
    for (const u of USERS) {
      q = q.leftJoin(`users as ${u}`, `${u}.id`, `i.${u}_id`);
      columns.push(`${u}.name as ${u}_name`, `${u}.email as ${u}_email`, `${u}.created_at as ${u}_created_at`);
    }
    return q.select<InvitationJoinRow[]>(columns);
  }

  async insert(
    i: {
      id: string;
      organizationId: string;
      email: string;
      role: InvitationRole;
      ssoMode: InvitationSsoMode;
      teams: InvitationTeam[];
      createdAt: Date;
      createdById: string | null;
    },
    trx: Knex,
  ): Promise<void> {
    await trx('organization_invitations').insert({
      id: i.id,
      organization_id: i.organizationId,
      email: i.email,
      email_lower: i.email.toLowerCase(),
      role: i.role,
      sso_mode: i.ssoMode,
      teams: JSON.stringify(i.teams),
      state: 'pending',
      created_at: i.createdAt,
      created_by_id: i.createdById,
    });
  }

  async find(organizationId: string, id: string, trx: Knex = this.db): Promise<Invitation | null> {
    const row = await this.select(trx).where({ 'i.organization_id': organizationId, 'i.id': id.toLowerCase() }).first();
    return row ? fromRow(row) : null;
  }

  /** Pending invitations, newest first by (created_at, id), `limit` at a time from a cursor; `more` when another page follows. */
  async pagePending(organizationId: string, opts: KeysetPage): Promise<{ items: Invitation[]; more: boolean }> {
    const rows = await keysetQuery(
      this.select(this.db).where({ 'i.organization_id': organizationId, 'i.state': 'pending' }),
      { at: 'i.created_at', id: 'i.id' },
      opts,
    );
    return keysetRows(rows, opts, fromRow);
  }

  /** Which of the (lower-cased) emails have a pending invitation to the organization. */
  async pendingEmails(organizationId: string, emailsLower: string[], trx: Knex = this.db): Promise<Set<string>> {
    if (!emailsLower.length) return new Set();
    const rows = await trx('organization_invitations')
      .where({ organization_id: organizationId, state: 'pending' })
      .whereIn('email_lower', emailsLower)
      .select('email_lower');
    return new Set(rows.map((r: { email_lower: string }) => r.email_lower));
  }

  /** Which of the (lower-cased) emails belong to members of the organization. */
  async memberEmails(organizationId: string, emailsLower: string[], trx: Knex = this.db): Promise<Set<string>> {
    if (!emailsLower.length) return new Set();
    const rows = await trx('organization_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .where('m.organization_id', organizationId)
      .whereRaw(`lower(u.email) in (${emailsLower.map(() => '?').join(', ')})`, emailsLower)
      .select('u.email');
    return new Set(rows.map((r: { email: string }) => r.email.toLowerCase()));
  }

  /** Every pending invitation of an email, in every organization, oldest first. */
  async pendingFor(emailLower: string, trx: Knex): Promise<Invitation[]> {
    const rows = await this.select(trx).where({ 'i.email_lower': emailLower, 'i.state': 'pending' }).orderBy('i.created_at');
    return rows.map(fromRow);
  }

  /** Moves a pending invitation on; false when it was no longer pending. */
  async settle(id: string, state: 'accepted' | 'revoked', userId: string | null, at: Date, trx: Knex): Promise<boolean> {
    const n = await trx('organization_invitations')
      .where({ id, state: 'pending' })
      .update(state === 'accepted' ? { state, accepted_at: at, accepted_by_id: userId } : { state, revoked_at: at, revoked_by_id: userId });
    return n === 1;
  }
}
