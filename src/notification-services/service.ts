/**
 * The rules of notification services, as the real API has them: administrators list, read,
 * create, update, delete, enable and disable them (other members get a 403). A service's
 * `scope_uuids` must name pipelines, teams or clusters of the same organization, checked through
 * those areas' services (this area sits above them). Secret settings (a webhook's token, a Slack
 * URL, OpenTelemetry headers) are sealed by `security/secret-box.ts` under the row's id: the
 * delivery side needs them back (`activeFor`, `findForDelivery`). An update changes only what is
 * sent, settings one by one. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import { ForbiddenError, NotFoundError, ValidationError, type FieldError } from '../core/errors';
import type { Actor } from '../core/identity';
import type { ClusterService } from '../clusters/service';
import type { PipelineService } from '../pipelines/service';
import { validateBranchFilter } from '../pipelines/branch-filter';
import type { Keys } from '../security/keys';
import { secretBox, type SecretBox } from '../security/secret-box';
import type { Operator, TeamService } from '../teams/service';
import { applySettings, isProvider, maskedWebhookUrl, PROVIDERS, REFUSED_PROVIDERS } from './provider-settings';
import type { NotificationServiceRecord, NotificationServiceRepository, ProviderId, ServiceFields, ServiceScope } from './repository';
import { encodeTimeCursor, timeCursors } from '../core/time-cursor';
import { clock } from '../core/clock';
import { changes as changedFields, type AuditEntry, type AuditLog } from '../audit/service';
import { everyValue } from '../core/enum-values';
import type { components } from '../../generated/api';
import { isRecord } from '../core/guards';
import { isOneOf } from '../db/row-types';

/** A service as answered: its record with the settings the API shows (of the secrets, only a webhook's token, which the docs return in full). */
export type NotificationService = Omit<NotificationServiceRecord, 'secretsSealed'>;

/** The secret settings the real API answers in full: a webhook's token (receivers check tokens and signatures with it). */
const SHOWN_SECRETS: Record<ProviderId, string[]> = { webhook: ['token'], slack: [], open_telemetry_tracing: [] };

/** Who acts: a caller of the REST API, or the operator at the command line (`windsock service`). */
export type ServiceCaller = Actor | Operator;

/** The build and job states a service may be told of, in the documented order. */
export const BUILD_STATE_KEYS = ['build_passed', 'build_fixed', 'build_failed', 'build_blocked', 'build_canceled', 'build_failing', 'job_activated'] as const;
export const SCOPES = everyValue<ServiceScope>()(['all', 'some_projects', 'some_teams', 'some_clusters'] as const satisfies readonly ServiceScope[]);

/** A service as the delivery side reads it: settings with their secrets opened. */
export interface ActiveNotificationService {
  id: string;
  organizationId: string;
  provider: ProviderId;
  scope: ServiceScope;
  scopeUuids: string[];
  branchConfiguration: string;
  buildStates: Record<string, boolean>;
  settings: Record<string, unknown>;
  creator: { id: string; name: string } | null;
}

/**
 * What a create or update may send (the REST body's fields, the CLI's options): the spec's
 * update body, whose `provider` is optional (a create's missing one is the service's 422, as the
 * CLI's path reaches it without the validator).
 */
export type ServiceInput = components['schemas']['UpdateNotificationServiceRequest'];

export interface ServicePage {
  items: NotificationService[];
  /** The cursor of the page after this one, or null on the last. */
  next: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isOperator = (c: ServiceCaller): c is Operator => 'operator' in c;

/** Fields of the representation a request may not set (the docs: a 422 for read-only fields); `enabled` has its own operations. */
const READ_ONLY = ['id', 'graphql_id', 'url', 'enabled', 'created_at', 'created_by'];
/** What a create or an update may send ("the same optional properties as create", and the provider). */
const WRITABLE = ['provider', 'description', 'branch_configuration', 'scope', 'scope_uuids', 'build_states', 'settings'];

/** The docs' 422 "when the request contains ... unknown, or read-only fields", each named. */
function onlyWritable(input: ServiceInput): void {
  const errors = Object.keys(input).flatMap((field) => {
    if (WRITABLE.includes(field)) return [];
    if (!READ_ONLY.includes(field)) return [{ field, code: `is not a notification service property (${WRITABLE.join(', ')})` }];
    return [{ field, code: field === 'enabled' ? 'is read-only (use the enable and disable operations)' : 'is read-only' }];
  });
  if (errors.length) throw new ValidationError(errors);
}

export interface NotificationServiceDeps {
  pipelines: Pick<PipelineService, 'idsInOrganization'>;
  teams: Pick<TeamService, 'get'>;
  clusters: Pick<ClusterService, 'exists'>;
}

export class NotificationServiceService {
  private readonly box: SecretBox;

  constructor(
    private readonly services: NotificationServiceRepository,
    private readonly deps: NotificationServiceDeps,
    keys: Keys,
    /** Told of each service after its create, or a change of it, commits (the composition root sends it the `ping` event); its failure does not fail the write. */
    private readonly onChanged: (s: ActiveNotificationService) => Promise<void> = async () => {},
    /** Where every change is recorded, in its transaction (src/audit/service.ts); never a service's settings or secrets. */
    private readonly audit: AuditLog | null = null,
  ) {
    this.box = secretBox(keys, 'notification-services');
  }

  /** `change` on this area's queries in one transaction, with its audit record in the same one (the operator's: no principal). */
  private audited<T>(caller: ServiceCaller, change: (services: NotificationServiceRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    if (!this.audit) return change(this.services);
    const actor = isOperator(caller) ? { organization: caller.organization } : caller;
    return this.audit.transaction(actor, (trx) => change(this.services.withTransaction(trx)), entry);
  }

  private requireAdmin(caller: ServiceCaller): void {
    if (!isOperator(caller) && caller.role !== 'admin') throw new ForbiddenError();
  }

  /** Oldest first, `limit` at a time, from a cursor (`after` or `before`, not both). */
  async list(caller: ServiceCaller, opts: { after?: string; before?: string; limit: number }): Promise<ServicePage> {
    this.requireAdmin(caller);
    const cursors = timeCursors(opts);
    const { items, more } = await this.services.page(caller.organization.id, { ...cursors, limit: opts.limit });
    const last = items.at(-1);
    // Read backwards, a page always has services after it (those the cursor named).
    const next = last && (more || cursors.before) ? encodeTimeCursor(last.createdAt, last.id) : null;
    return { items: items.map((i) => this.view(i)), next };
  }

  /** A service of the caller's organization, or 404 as if it did not exist. */
  async get(caller: ServiceCaller, id: string): Promise<NotificationService> {
    this.requireAdmin(caller);
    return this.view(await this.find(caller.organization.id, id));
  }

  private view(s: NotificationServiceRecord): NotificationService {
    const { secretsSealed: _sealed, ...rest } = s;
    const shown = SHOWN_SECRETS[s.provider];
    if (!shown.length) return rest;
    const opened = this.settingsOf(s);
    const settings: Record<string, unknown> = { ...s.settings, ...Object.fromEntries(shown.map((k) => [k, opened[k] ?? null])) };
    // A webhook URL's credentials are answered masked, also for a row stored before they were sealed.
    if (s.provider === 'webhook' && typeof settings.url === 'string') settings.url = maskedWebhookUrl(settings.url) ?? settings.url;
    return { ...rest, settings };
  }

  private async find(organizationId: string, id: string): Promise<NotificationServiceRecord> {
    const key = id.trim().toLowerCase();
    const s = UUID.test(key) ? await this.services.find(organizationId, key) : null;
    if (!s) throw new NotFoundError('notification service');
    return s;
  }

  async create(caller: ServiceCaller, input: ServiceInput): Promise<NotificationService> {
    this.requireAdmin(caller);
    onlyWritable(input);
    const provider = this.provider(input.provider);
    const errors: FieldError[] = [];
    const { plain, secrets } = applySettings(provider, null, input.settings, errors);
    const scope = await this.scope(caller, input.scope ?? 'all', input.scope_uuids ?? [], errors);
    const fields: Omit<ServiceFields, 'secretsSealed'> = {
      description: this.description(input.description, errors) ?? '',
      enabled: true,
      scope: scope.scope,
      scopeUuids: scope.uuids,
      branchConfiguration: this.branches(input.branch_configuration, errors) ?? '',
      buildStates: this.buildStates(null, input.build_states, errors),
      settings: plain,
    };
    if (errors.length) throw new ValidationError(errors);
    const id = crypto.randomUUID();
    await this.audited(
      caller,
      (services) =>
        services.insert({
          id,
          organizationId: caller.organization.id,
          provider,
          userId: isOperator(caller) ? null : caller.principal.user.id,
          at: clock.now(),
          ...fields,
          secretsSealed: this.box.seal(JSON.stringify(secrets), id),
        }),
      () => ({
        type: 'NotificationServiceCreatedEvent',
        subject: serviceSubject({ id, description: fields.description }),
        data: { provider, ...auditedFields(fields) },
      }),
    );
    const created = await this.find(caller.organization.id, id);
    await this.pinged(created);
    return this.view(created);
  }

  async update(caller: ServiceCaller, id: string, input: ServiceInput): Promise<NotificationService> {
    this.requireAdmin(caller);
    const current = await this.find(caller.organization.id, id);
    onlyWritable(input);
    const errors: FieldError[] = [];
    if (input.provider !== undefined && input.provider !== current.provider) {
      errors.push({ field: 'provider', code: `can't be changed (it is ${current.provider})` });
    }
    const changes: Partial<ServiceFields> = {};
    if (input.description !== undefined) changes.description = this.description(input.description, errors) ?? '';
    if (input.branch_configuration !== undefined) changes.branchConfiguration = this.branches(input.branch_configuration, errors) ?? '';
    if (input.build_states !== undefined) changes.buildStates = this.buildStates(current.buildStates, input.build_states, errors);
    if (input.scope !== undefined || input.scope_uuids !== undefined) {
      const scope = input.scope ?? current.scope;
      // A new some_* scope names objects of another kind: its uuids must come with it.
      const uuids = input.scope_uuids ?? (scope === current.scope ? current.scopeUuids : []);
      const checked = await this.scope(caller, scope, uuids, errors);
      changes.scope = checked.scope;
      changes.scopeUuids = checked.uuids;
    }
    if (input.settings !== undefined) {
      const stored = this.settingsOf(current);
      const { plain, secrets } = applySettings(current.provider, stored, input.settings, errors);
      changes.settings = plain;
      changes.secretsSealed = this.box.seal(JSON.stringify(secrets), current.id);
    }
    if (errors.length) throw new ValidationError(errors);
    if (Object.keys(changes).length === 0) return this.view(current);
    await this.audited(
      caller,
      async (services) => {
        if (!(await services.update(caller.organization.id, current.id, changes, clock.now()))) throw new NotFoundError('notification service');
      },
      () => ({
        type: 'NotificationServiceUpdatedEvent',
        subject: serviceSubject({ id: current.id, description: changes.description ?? current.description }),
        // Settings hold credentials: only that they were sent.
        data: { ...changedFields(auditedFields(current), auditedFields(changes)), ...(changes.settings !== undefined ? { settings_changed: true } : {}) },
      }),
    );
    const updated = await this.find(caller.organization.id, current.id);
    // The docs' ping: 'Webhook notification settings have changed' (sent when one is created, too).
    if (updated.enabled) await this.pinged(updated);
    return this.view(updated);
  }

  /**
   * Seals the credentials of webhook URLs stored before they were secrets (plain in `settings`):
   * the URL moves into the sealed secrets, the plain settings keep its mask, as an update would
   * store it. Run once at start, after migrations; one transaction; a row already sealed (its
   * secrets hold the URL) or without credentials is left as it is, so a second run changes
   * nothing. Returns how many rows it sealed, and how many it could not (secrets sealed under other keys).
   */
  async sealLegacyWebhookUrls(): Promise<{ sealed: number; unreadable: number }> {
    return this.services.transaction(async (trx) => {
      let sealed = 0;
      let unreadable = 0;
      for (const row of await this.services.allWebhooks(trx)) {
        const url = row.settings.url;
        if (typeof url !== 'string') continue;
        const masked = maskedWebhookUrl(url);
        if (masked === null) continue;
        let secrets: Record<string, unknown>;
        try {
          secrets = row.secretsSealed ? this.openSecrets(row.secretsSealed, row.id) : {};
        } catch {
          // Sealed under other keys: its token cannot be kept, so the row is left for its admin to update.
          unreadable += 1;
          continue;
        }
        if (typeof secrets.url === 'string') continue;
        const settings = { ...row.settings, url: masked };
        if (await this.services.reseal(trx, row.id, row.secretsSealed, settings, this.box.seal(JSON.stringify({ ...secrets, url }), row.id))) sealed += 1;
      }
      return { sealed, unreadable };
    });
  }

  async delete(caller: ServiceCaller, id: string): Promise<void> {
    this.requireAdmin(caller);
    const s = await this.find(caller.organization.id, id);
    await this.audited(
      caller,
      async (services) => {
        if (!(await services.delete(caller.organization.id, s.id))) throw new NotFoundError('notification service');
      },
      () => ({ type: 'NotificationServiceDeletedEvent', subject: serviceSubject(s), data: { provider: s.provider } }),
    );
  }

  async setEnabled(caller: ServiceCaller, id: string, enabled: boolean): Promise<NotificationService> {
    this.requireAdmin(caller);
    const s = await this.find(caller.organization.id, id);
    if (s.enabled === enabled) return this.view(s);
    await this.audited(
      caller,
      async (services) => {
        if (!(await services.update(caller.organization.id, s.id, { enabled }, clock.now()))) throw new NotFoundError('notification service');
      },
      () => ({ type: enabled ? 'NotificationServiceEnabledEvent' : 'NotificationServiceDisabledEvent', subject: serviceSubject(s), data: { enabled } }),
    );
    return this.view(await this.find(caller.organization.id, s.id));
  }

  /** The service is told its settings (changed or new): the delivery side's ping. */
  private async pinged(s: NotificationServiceRecord): Promise<void> {
    try {
      await this.onChanged(this.active(s));
    } catch {
      // The service is saved: a failed ping is the delivery side's to record, not a failed write.
    }
  }

  /* The delivery side (src/notifications/). */

  /** The organization's enabled services, oldest first, with their secret settings opened. */
  async activeFor(organizationId: string): Promise<ActiveNotificationService[]> {
    return (await this.services.enabled(organizationId)).map((s) => this.active(s));
  }

  /** One service of the organization (enabled or not) as the delivery side reads it, or null. */
  async findForDelivery(organizationId: string, id: string): Promise<ActiveNotificationService | null> {
    const key = id.toLowerCase();
    const s = UUID.test(key) ? await this.services.find(organizationId, key) : null;
    return s ? this.active(s) : null;
  }

  private active(s: NotificationServiceRecord): ActiveNotificationService {
    return {
      id: s.id,
      organizationId: s.organizationId,
      provider: s.provider,
      scope: s.scope,
      scopeUuids: [...s.scopeUuids],
      branchConfiguration: s.branchConfiguration,
      buildStates: { ...s.buildStates },
      settings: this.settingsOf(s),
      creator: s.createdBy ? { id: s.createdBy.id, name: s.createdBy.name } : null,
    };
  }

  /** Every setting of a service, its secrets opened. */
  private settingsOf(s: NotificationServiceRecord): Record<string, unknown> {
    const secrets = s.secretsSealed ? this.openSecrets(s.secretsSealed, s.id) : {};
    return { ...s.settings, ...secrets };
  }

  /** A service's sealed secret settings, opened: the JSON object `applySettings` split off. */
  private openSecrets(sealed: string, id: string): Record<string, unknown> {
    const secrets: unknown = JSON.parse(this.box.open(sealed, id));
    if (!isRecord(secrets)) throw new TypeError(`notification service ${id}: its sealed settings are not an object`);
    return secrets;
  }

  /* Checks */

  private provider(value: string | undefined): ProviderId {
    const id = (value ?? '').trim();
    if (!id) throw ValidationError.field('provider', "can't be blank");
    if (isProvider(id)) return id;
    const reason = REFUSED_PROVIDERS[id];
    if (reason) throw new ValidationError([{ field: 'provider', code: `${id} ${reason}` }], `The ${id} provider is not available on this server: it ${reason}`);
    throw new ValidationError(
      [{ field: 'provider', code: `is not a known provider (known: ${Object.keys(PROVIDERS).join(', ')})` }],
      `Unknown notification service provider "${id.slice(0, 100)}"`,
    );
  }

  private description(value: string | null | undefined, errors: FieldError[]): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (value.length > 1000) {
      errors.push({ field: 'description', code: 'is too long (at most 1000 characters)' });
      return undefined;
    }
    return value.trim();
  }

  private branches(value: string | null | undefined, errors: FieldError[]): string | undefined {
    if (value === undefined || value === null) return undefined;
    const filter = value.trim();
    if (!filter) return '';
    const problem = validateBranchFilter(filter);
    if (problem) {
      errors.push({ field: 'branch_configuration', code: problem });
      return undefined;
    }
    return filter;
  }

  private buildStates(
    current: Record<string, boolean> | null,
    sent: Partial<Record<string, boolean>> | undefined,
    errors: FieldError[],
  ): Record<string, boolean> {
    const out: Record<string, boolean> = {};
    for (const key of BUILD_STATE_KEYS) out[key] = current?.[key] ?? false;
    for (const [key, value] of Object.entries(sent ?? {})) {
      if (!isOneOf(BUILD_STATE_KEYS, key)) errors.push({ field: `build_states.${key}`, code: `is not a build state (known: ${BUILD_STATE_KEYS.join(', ')})` });
      else if (typeof value !== 'boolean') errors.push({ field: `build_states.${key}`, code: 'must be true or false' });
      else out[key] = value;
    }
    return out;
  }

  /** The scope and its uuids, each uuid checked to name an object of the right kind in the caller's organization. */
  private async scope(caller: ServiceCaller, scope: string, sent: string[], errors: FieldError[]): Promise<{ scope: ServiceScope; uuids: string[] }> {
    if (!isOneOf(SCOPES, scope)) {
      errors.push({ field: 'scope', code: `must be one of ${SCOPES.join(', ')}` });
      return { scope: 'all', uuids: [] };
    }
    const s = scope;
    const uuids = [...new Set(sent.map((u) => String(u).trim().toLowerCase()))];
    if (s === 'all') {
      if (uuids.length) errors.push({ field: 'scope_uuids', code: 'must be empty when scope is all' });
      return { scope: s, uuids: [] };
    }
    const kind = s === 'some_projects' ? 'pipeline' : s === 'some_teams' ? 'team' : 'cluster';
    if (!uuids.length) {
      errors.push({ field: 'scope_uuids', code: `can't be empty when scope is ${s} (name the ${kind}s by UUID)` });
      return { scope: s, uuids };
    }
    const orgId = caller.organization.id;
    const candidates = uuids.filter((u) => UUID.test(u));
    let found: Set<string>;
    if (kind === 'pipeline') found = await this.deps.pipelines.idsInOrganization(orgId, candidates);
    else {
      found = new Set();
      for (const u of candidates) {
        const ok =
          kind === 'cluster'
            ? await this.deps.clusters.exists(orgId, u)
            : await this.deps.teams.get({ operator: true, organization: caller.organization }, u).then(
                () => true,
                (err: unknown) => {
                  if (err instanceof NotFoundError) return false;
                  throw err;
                },
              );
        if (ok) found.add(u);
      }
    }
    const missing = uuids.filter((u) => !found.has(u));
    if (missing.length) {
      errors.push({
        field: 'scope_uuids',
        code: `${missing
          .slice(0, 5)
          .map((u) => u.slice(0, 36))
          .join(
            ', ',
          )}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''} ${missing.length === 1 ? 'is not a' : 'are not'} ${kind}${missing.length === 1 ? '' : 's'} of this organization`,
      });
    }
    return { scope: s, uuids };
  }
}

const serviceSubject = (s: { id: string; description: string }) => ({ type: 'NotificationService', id: s.id, name: s.description || null });

/** A service's fields as the audit log holds them (the API's names): never its settings or sealed secrets. */
function auditedFields(f: Partial<ServiceFields>): Record<string, unknown> {
  return {
    description: f.description,
    enabled: f.enabled,
    scope: f.scope,
    scope_uuids: f.scopeUuids,
    branch_configuration: f.branchConfiguration,
    build_states: f.buildStates,
  };
}
