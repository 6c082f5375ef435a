/**
 * The rules of invitations: administrators list, read, create and revoke them; a batch is
 * checked whole before anything is made (addresses, members, pending invitations, teams); each
 * invitation made or revoked is recorded in the audit log in its transaction; and a user who
 * signs up with an invited email joins the organization with the invitation's role and teams
 * (`acceptFor`, on the sign-up's own transaction). No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { AuditLog } from '../audit/service';
import { clock } from '../core/clock';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { Actor, User } from '../core/identity';
import { isUuid } from '../core/uuid';
import type { OrganizationService } from '../organizations/service';
import type { Invitation, InvitationRepository, InvitationRole, InvitationSsoMode, InvitationTeam } from './repository';
import { encodeTimeCursor, timeCursors } from '../core/time-cursor';

/** An invitation as it is shown: each of its teams with its slug. */
export type ShownInvitation = Omit<Invitation, 'teams'> & { teams: (InvitationTeam & { slug: string })[] };

export interface InvitationInput {
  emails: string[];
  role?: InvitationRole;
  sso_mode?: InvitationSsoMode;
  teams?: InvitationTeam[];
}

/** One address: a local part, an @, a domain with a dot; no blanks. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const subject = (i: { id: string; email: string }) => ({ type: 'OrganizationInvitation', id: i.id, name: i.email });

export class InvitationService {
  constructor(
    private readonly db: Knex,
    private readonly invitations: InvitationRepository,
    private readonly organizations: Pick<OrganizationService, 'teamSlugsIn' | 'join'>,
    private readonly audit: AuditLog,
  ) {}

  private static requireAdmin(actor: Actor): void {
    if (actor.role !== 'admin') throw new ForbiddenError();
  }

  async list(actor: Actor, opts: { after?: string; before?: string; limit: number }): Promise<{ items: ShownInvitation[]; next: string | null }> {
    InvitationService.requireAdmin(actor);
    const cursors = timeCursors(opts);
    const { items, more } = await this.invitations.pagePending(actor.organization.id, { ...cursors, limit: opts.limit });
    const last = items.at(-1);
    return { items: await this.shown(actor.organization.id, items), next: last && (more || cursors.before) ? encodeTimeCursor(last.createdAt, last.id) : null };
  }

  async get(actor: Actor, id: string): Promise<ShownInvitation> {
    InvitationService.requireAdmin(actor);
    const found = isUuid(id) ? await this.invitations.find(actor.organization.id, id) : null;
    const [shown] = found ? await this.shown(actor.organization.id, [found]) : [];
    if (!shown) throw new NotFoundError('invitation');
    return shown;
  }

  /** The invitations with their teams' slugs, as the docs show them; a team deleted since is left out. */
  private async shown(organizationId: string, invitations: Invitation[]): Promise<ShownInvitation[]> {
    const slugs = await this.organizations.teamSlugsIn(organizationId, [...new Set(invitations.flatMap((i) => i.teams.map((t) => t.id)))]);
    return invitations.map((i) => ({
      ...i,
      teams: i.teams.flatMap((t) => {
        const slug = slugs.get(t.id);
        return slug === undefined ? [] : [{ ...t, slug }];
      }),
    }));
  }

  async create(actor: Actor, input: InvitationInput): Promise<ShownInvitation[]> {
    InvitationService.requireAdmin(actor);
    const org = actor.organization;
    const errors: FieldError[] = [];
    // Deduplicated case-insensitively, the first spelling kept.
    const emails = new Map<string, string>();
    for (const raw of input.emails) {
      const email = raw.trim();
      if (!EMAIL.test(email)) errors.push({ field: 'emails', code: `is not an email address (${raw.slice(0, 100)})` });
      else if (!emails.has(email.toLowerCase())) emails.set(email.toLowerCase(), email);
    }
    const lower = [...emails.keys()];
    for (const e of await this.invitations.memberEmails(org.id, lower))
      errors.push({ field: 'emails', code: `is already a member of this organization (${emails.get(e)})` });
    for (const e of await this.invitations.pendingEmails(org.id, lower))
      errors.push({ field: 'emails', code: `already has a pending invitation (${emails.get(e)})` });
    const teams = (input.teams ?? []).map((t) => ({ id: t.id.toLowerCase(), role: t.role }));
    const seen = new Set<string>();
    for (const t of teams) {
      if (seen.has(t.id)) errors.push({ field: 'teams', code: `names a team more than once (${t.id})` });
      seen.add(t.id);
    }
    const known = await this.organizations.teamSlugsIn(org.id, [...seen]);
    for (const id of seen) if (!known.has(id)) errors.push({ field: 'teams', code: `is not a team of this organization (${id})` });
    if (errors.length) throw new ValidationError(errors);

    const createdAt = clock.now();
    const ids: string[] = [];
    await this.db.transaction(async (trx) => {
      for (const email of emails.values()) {
        const id = crypto.randomUUID();
        const role = input.role ?? 'member';
        await this.invitations.insert(
          { id, organizationId: org.id, email, role, ssoMode: input.sso_mode ?? 'required', teams, createdAt, createdById: actor.principal.user.id },
          trx,
        );
        await this.audit.record(trx, actor, { type: 'OrganizationInvitationCreatedEvent', subject: subject({ id, email }), data: { email, role, teams } });
        ids.push(id);
      }
    });
    return this.shown(org.id, await Promise.all(ids.map(async (id) => (await this.invitations.find(org.id, id))!)));
  }

  async revoke(actor: Actor, id: string): Promise<void> {
    const invitation = await this.get(actor, id);
    if (invitation.state !== 'pending') throw new UnprocessableError(`This invitation is ${invitation.state} and can't be revoked`);
    await this.db.transaction(async (trx) => {
      if (!(await this.invitations.settle(invitation.id, 'revoked', actor.principal.user.id, clock.now(), trx))) {
        throw new UnprocessableError("This invitation is no longer pending and can't be revoked");
      }
      await this.audit.record(trx, actor, { type: 'OrganizationInvitationRevokedEvent', subject: subject(invitation), data: { email: invitation.email } });
    });
  }

  /**
   * A new user's pending invitations, accepted on the sign-up's transaction: the user joins each
   * organization with the invitation's role and teams. The organizations joined, oldest invitation first.
   */
  async acceptFor(user: User, trx: Knex): Promise<string[]> {
    const joined: string[] = [];
    for (const invitation of await this.invitations.pendingFor(user.email.toLowerCase(), trx)) {
      if (!(await this.invitations.settle(invitation.id, 'accepted', user.id, clock.now(), trx))) continue;
      await this.organizations.join(invitation.organizationId, user.id, invitation.role, invitation.teams, trx);
      await this.audit.record(
        trx,
        { organization: { id: invitation.organizationId }, principal: { user } },
        {
          type: 'OrganizationInvitationAcceptedEvent',
          subject: subject(invitation),
          data: { email: invitation.email, role: invitation.role },
          context: 'SignUpContext',
        },
      );
      joined.push(invitation.organizationId);
    }
    return joined;
  }
}
