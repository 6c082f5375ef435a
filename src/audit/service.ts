/**
 * The audit log: every admin action is recorded by the service that takes it, IN the
 * transaction of the change (`record(trx, ...)`), so a rolled-back change records nothing and a
 * committed one is never missing. Secrets never reach a record: `data` is passed through
 * `redact`, which drops every key that names one (token, secret, password, value...). Reading
 * the log is for the organization's administrators. No HTTP, no SQL.
 */
import { encodeTimeCursor, timeCursors } from '../core/time-cursor';
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { clock } from '../core/clock';
import { ForbiddenError, NotFoundError } from '../core/errors';
import type { Actor, User } from '../core/identity';
import { isUuid } from '../core/uuid';
import type { AuditEvent, AuditParty, AuditRepository } from './repository';

/**
 * Who took an action in which organization: a user (an API caller, or one accepting an
 * invitation at sign-up), or without `principal` the operator at the command line.
 */
export interface AuditActor {
  organization: { id: string };
  principal?: { user: Pick<User, 'id' | 'name'> };
}

export interface AuditEntry {
  /** e.g. `TeamCreatedEvent` */
  type: string;
  subject: AuditParty;
  /** What changed (the new values), or what was made or removed; secrets are dropped. */
  data?: Record<string, unknown>;
  /** Where it came from, when not the API (a user's) or the command line (the operator's). */
  context?: string;
}

/**
 * Keys whose values are secrets (or hold them): never written to the log, at any depth. A key
 * is one when its last word is one of these (`token`, `webhook_secret`, `api_key`, a secret's
 * `value`, a notification service's `settings`...), not when a word only appears in it
 * (`revoke_inactive_tokens_after_days` is kept).
 */
const SECRET_KEY =
  /(^|_)(token|tokens|secret|password|passphrase|private_key|credentials?|key_pem|api_key|signing_key|value|settings|jwt|url_with_credentials)$/i;

export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object' && !(value instanceof Date)) return redactObject(value);
  return value;
}

/** `redact` of an object: its keys but the secret ones, each value redacted. */
function redactObject(value: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!SECRET_KEY.test(k) && v !== undefined) out[k] = redact(v);
  return out;
}

/**
 * What an update changed, as the log shows it: `{ field: { before, after } }` for each field of
 * `after` (the API's names, those given) whose value differs from `before`'s. Secret fields are
 * dropped by `redact` when recorded, like any other data.
 */
export function changes(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  /** Fields recorded only as `{ changed: true }`: large (a configuration) or holding values that may be secret (an env). */
  opaque: readonly string[] = [],
): Record<string, { before: unknown; after: unknown } | { changed: true }> {
  const out: Record<string, { before: unknown; after: unknown } | { changed: true }> = {};
  const plain = (v: unknown) => (v instanceof Date ? v.toISOString() : (v ?? null));
  for (const [k, v] of Object.entries(after)) {
    if (v === undefined) continue;
    const was = plain(before[k]);
    const now = plain(v);
    if (JSON.stringify(was) !== JSON.stringify(now)) out[k] = opaque.includes(k) ? { changed: true } : { before: was, after: now };
  }
  return out;
}

export class AuditLog {
  constructor(
    private readonly db: Knex,
    private readonly events: AuditRepository,
  ) {}

  /** Records `entry` as done by `actor`, on `trx`: the transaction of the change itself. */
  async record(trx: Knex, actor: AuditActor, entry: AuditEntry): Promise<void> {
    await this.events.insert(
      {
        id: crypto.randomUUID(),
        organizationId: actor.organization.id,
        type: entry.type,
        occurredAt: clock.now(),
        actor: actor.principal ? { type: 'User', id: actor.principal.user.id, name: actor.principal.user.name } : null,
        subject: entry.subject,
        context: { type: entry.context ?? (actor.principal ? 'APIContext' : 'CommandLineContext') },
        data: redactObject(entry.data ?? {}),
      },
      trx,
    );
  }

  /** Runs `change` in a transaction and records `entry` (which may depend on its result) in the same one. */
  async transaction<T>(actor: AuditActor, change: (trx: Knex.Transaction) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    return this.db.transaction(async (trx) => {
      const result = await change(trx);
      await this.record(trx, actor, entry(result));
      return result;
    });
  }

  /**
   * Newest first, `limit` at a time, from a cursor (`after` or `before`, not both); `next` and
   * `prev`: the cursors of the pages after and before it, where there are such pages.
   */
  async list(
    actor: Actor,
    opts: { after?: string; before?: string; limit: number },
  ): Promise<{ items: AuditEvent[]; next: string | null; prev: string | null }> {
    if (actor.role !== 'admin') throw new ForbiddenError();
    const cursors = timeCursors(opts);
    const { items, more } = await this.events.page(actor.organization.id, { ...cursors, limit: opts.limit });
    const [first, last] = [items.at(0), items.at(-1)];
    return {
      items,
      next: last && (more || cursors.before) ? encodeTimeCursor(last.occurredAt, last.id) : null,
      prev: first && (cursors.after || (cursors.before && more)) ? encodeTimeCursor(first.occurredAt, first.id) : null,
    };
  }

  async get(actor: Actor, id: string): Promise<AuditEvent> {
    if (actor.role !== 'admin') throw new ForbiddenError();
    const event = isUuid(id) ? await this.events.find(actor.organization.id, id) : null;
    if (!event) throw new NotFoundError('audit event');
    return event;
  }
}
