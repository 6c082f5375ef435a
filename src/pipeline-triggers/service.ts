/**
 * The rules of pipeline triggers. Managing them needs Full Access to the pipeline (reads too: a
 * trigger's configuration is a pipeline setting), as the docs say. A trigger's token (`bktr_`
 * and 40 random characters) is shown once, in the create answer, and kept as its SHA-256 with
 * its last two characters for the hint; a verification secret is sealed (an HMAC needs it).
 *
 * An incoming call (`POST /deliver/bktr_...`, `receive`): a malformed token is a 400, an unknown
 * one a 404, a disabled trigger a 403, each with the docs' message; a refused signature a 401.
 * Otherwise the delivery is recorded (the latest 100 are kept) and, unless the pipeline's
 * branch filter excludes the trigger's branch or the body is not a JSON object, a build is made
 * with the trigger's commit, branch, message (defaults `HEAD`, the pipeline's default branch,
 * `Triggered build`) and environment, the payload as the `buildkite:webhook` meta-data.
 * No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import type { BuildService } from '../builds/service';
import {
  BadRequestError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  RefusedError,
  SignatureError,
  TriggerTokenError,
  UnprocessableError,
  ValidationError,
} from '../core/errors';
import type { Actor } from '../core/identity';
import { matchesBranchFilter } from '../pipelines/branch-filter';
import type { OrganizationService } from '../organizations/service';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import { sha256Hex, type Keys } from '../security/keys';
import { secretBox, type SecretBox } from '../security/secret-box';
import { clock } from '../core/clock';
import type { PipelineTrigger, PipelineTriggerRepository, TriggerChanges, TriggerDelivery } from './repository';
import { encodeTimeCursor, timeCursors } from '../core/time-cursor';
import type { KeysetPage } from '../db/keyset';
import { isRecord } from '../core/guards';

export type CreateTriggerInput = components['schemas']['CreatePipelineTriggerRequest'];
export type UpdateTriggerInput = components['schemas']['UpdatePipelineTriggerRequest'];

export const TOKEN_PREFIX = 'bktr_';
const TOKEN = /^bktr_[A-Za-z0-9]{40}$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Header values a delivery's request shows; every other value is redacted (the docs' allowlist). */
const SHOWN_HEADERS = new Set(['x-github-event', 'x-github-delivery']);

function newToken(): string {
  const bytes = crypto.randomBytes(40);
  return TOKEN_PREFIX + [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join('');
}

/** `XXXX...` and the last two characters, as the docs' hints. */
export function hint(lastTwo: string): string {
  return 'X'.repeat(20) + lastTwo;
}

export interface PageOptions {
  after?: string;
  before?: string;
  limit: number;
}

function cursors(opts: PageOptions): KeysetPage {
  return { ...timeCursors(opts), limit: opts.limit };
}

/** What an incoming call carries. */
export interface IncomingCall {
  contentType: string | null;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer | undefined;
  body: unknown;
}

export interface IncomingResult {
  delivery: TriggerDelivery;
  build: { id: string; number: number; pipelineSlug: string } | null;
  message: string;
  /** The trigger's organization's slug (the build's URLs name it). */
  orgSlug: string;
}

export class PipelineTriggerService {
  private readonly box: SecretBox;

  constructor(
    private readonly triggers: PipelineTriggerRepository,
    private readonly pipelines: PipelineService,
    private readonly builds: BuildService,
    private readonly organizations: OrganizationService,
    keys: Keys,
  ) {
    this.box = secretBox(keys, 'pipeline-trigger-verification');
  }

  /** The pipeline, for a caller with Full Access to it. */
  private async managed(actor: Actor, pipelineSlug: string): Promise<Pipeline> {
    const { pipeline, perms } = await this.pipelines.get(actor, pipelineSlug);
    if (!perms.edit) throw new ForbiddenError();
    return pipeline;
  }

  private async find(pipeline: Pipeline, id: string): Promise<PipelineTrigger> {
    const found = await this.triggers.findInPipeline(pipeline.id, id.toLowerCase());
    if (!found) throw new NotFoundError('pipeline trigger');
    return found;
  }

  async list(actor: Actor, pipelineSlug: string, opts: PageOptions): Promise<{ items: PipelineTrigger[]; next: string | null }> {
    const pipeline = await this.managed(actor, pipelineSlug);
    const c = cursors(opts);
    const { items, more } = await this.triggers.page(pipeline.id, c);
    const last = items.at(-1);
    return { items, next: last && (more || c.before) ? encodeTimeCursor(last.createdAt, last.id) : null };
  }

  async get(actor: Actor, pipelineSlug: string, id: string): Promise<PipelineTrigger> {
    return this.find(await this.managed(actor, pipelineSlug), id);
  }

  /** The rules every write checks: no filter (webhook filtering is not offered), verification only for github and linear. */
  private checkConfiguration(type: PipelineTrigger['type'], input: { filter?: unknown; verification?: { secret?: string } | null }): void {
    if (input.filter !== undefined && input.filter !== null) {
      throw new ValidationError([{ field: 'filter', code: 'webhook filtering is not enabled for this organization' }]);
    }
    if (input.verification && type === 'webhook') {
      throw new ValidationError([{ field: 'verification', code: 'is not supported for webhook triggers (only github and linear)' }]);
    }
  }

  async create(actor: Actor, pipelineSlug: string, input: CreateTriggerInput): Promise<{ trigger: PipelineTrigger; token: string }> {
    const pipeline = await this.managed(actor, pipelineSlug);
    this.checkConfiguration(input.type, input);
    if (!input.label.trim()) throw ValidationError.field('label', "can't be blank");
    if (input.verification && !input.verification.secret) throw ValidationError.field('verification.secret', "can't be blank");
    const id = crypto.randomUUID();
    const token = newToken();
    const secret = input.verification?.secret;
    const now = clock.now();
    await this.triggers.insert({
      id,
      organizationId: pipeline.organizationId,
      pipelineId: pipeline.id,
      type: input.type,
      label: input.label.trim(),
      enabled: input.enabled ?? true,
      message: input.build?.message ?? null,
      commit: input.build?.commit ?? null,
      branch: input.build?.branch ?? null,
      environment: input.build?.environment ?? {},
      verificationStrategy: secret ? 'hmac' : null,
      verificationSecretSealed: secret ? this.box.seal(secret, id) : null,
      verificationSecretHint: secret ? secret.slice(-2) : null,
      tokenHash: sha256Hex(token),
      tokenHint: token.slice(-2),
      createdById: actor.principal.user.id,
      createdAt: now,
      updatedAt: now,
    });
    return { trigger: (await this.triggers.findInPipeline(pipeline.id, id))!, token };
  }

  async update(actor: Actor, pipelineSlug: string, id: string, input: UpdateTriggerInput): Promise<PipelineTrigger> {
    const pipeline = await this.managed(actor, pipelineSlug);
    const current = await this.find(pipeline, id);
    this.checkConfiguration(current.type, input);
    if (input.label !== undefined && !input.label.trim()) throw ValidationError.field('label', "can't be blank");
    const changes: TriggerChanges = { updatedById: actor.principal.user.id, updatedAt: clock.now() };
    if (input.label !== undefined) changes.label = input.label.trim();
    if (input.enabled !== undefined) changes.enabled = input.enabled;
    const b = input.build;
    if (b) {
      // Present and null: back to the default; absent: unchanged.
      if ('message' in b) changes.message = b.message ?? null;
      if ('commit' in b) changes.commit = b.commit ?? null;
      if ('branch' in b) changes.branch = b.branch ?? null;
      if (b.environment !== undefined) changes.environment = b.environment;
    }
    if (input.verification === null) {
      Object.assign(changes, { verificationStrategy: null, verificationSecretSealed: null, verificationSecretHint: null });
    } else if (input.verification) {
      const secret = input.verification.secret;
      if (!secret && !current.verificationSecretSealed) throw ValidationError.field('verification.secret', "can't be blank");
      changes.verificationStrategy = 'hmac';
      if (secret) Object.assign(changes, { verificationSecretSealed: this.box.seal(secret, current.id), verificationSecretHint: secret.slice(-2) });
    }
    // Nothing it knows was sent (only read-only or unknown properties): nothing changes, `updated_at` neither.
    if (Object.keys(changes).length > 2) await this.triggers.update(current.id, changes);
    return (await this.triggers.findInPipeline(pipeline.id, current.id))!;
  }

  async delete(actor: Actor, pipelineSlug: string, id: string): Promise<void> {
    const pipeline = await this.managed(actor, pipelineSlug);
    if (!(await this.triggers.delete(pipeline.id, id.toLowerCase()))) throw new NotFoundError('pipeline trigger');
  }

  async deliveries(actor: Actor, pipelineSlug: string, triggerId: string, opts: PageOptions): Promise<{ items: TriggerDelivery[]; next: string | null }> {
    const trigger = await this.get(actor, pipelineSlug, triggerId);
    const c = cursors(opts);
    const { items, more } = await this.triggers.deliveries(trigger.id, c);
    const last = items.at(-1);
    return { items, next: last && (more || c.before) ? encodeTimeCursor(last.receivedAt, last.id) : null };
  }

  async delivery(actor: Actor, pipelineSlug: string, triggerId: string, id: string): Promise<TriggerDelivery> {
    const trigger = await this.get(actor, pipelineSlug, triggerId);
    const found = await this.triggers.findDelivery(trigger.id, id.toLowerCase());
    if (!found) throw new NotFoundError('delivery');
    return found;
  }

  /** Whether a `/deliver/{token}` token is a pipeline trigger's (the rest are pipelines' webhook tokens). */
  static isTriggerToken(token: string): boolean {
    return token.startsWith(TOKEN_PREFIX);
  }

  /** An incoming call to a trigger's endpoint. */
  async receive(token: string, call: IncomingCall): Promise<IncomingResult> {
    if (!TOKEN.test(token)) throw new BadRequestError('Invalid pipeline trigger token');
    const trigger = await this.triggers.findByTokenHash(sha256Hex(token));
    if (!trigger) throw new TriggerTokenError();
    if (!trigger.enabled) throw new RefusedError('Pipeline trigger is disabled');
    if (trigger.verificationSecretSealed) this.verify(trigger, call);

    const header = (name: string) => {
      const v = call.headers[name];
      return Array.isArray(v) ? v.join(', ') : (v ?? null);
    };
    const payloadIsObject = typeof call.body === 'object' && call.body !== null && !Array.isArray(call.body);
    const delivery: TriggerDelivery = {
      id: crypto.randomUUID(),
      triggerId: trigger.id,
      receivedAt: clock.now(),
      contentType: call.contentType,
      externalId: header('x-github-delivery'),
      status: null,
      reason: null,
      builds: [],
      headers: Object.keys(call.headers)
        .map((n) => n.toLowerCase())
        .sort()
        .map((name) => (SHOWN_HEADERS.has(name) ? { name, value: header(name), redacted: false } : { name, value: null, redacted: true })),
      payload: isRecord(call.body) ? call.body : {},
    };
    const pipeline = await this.pipelines.findByIdsForSystem([trigger.pipelineId]).then((ps) => ps[0] ?? null);
    const branch = trigger.branch ?? pipeline?.defaultBranch ?? 'main';
    let build: IncomingResult['build'] = null;
    let message: string;
    if (!payloadIsObject) {
      Object.assign(delivery, { status: 'failed', reason: 'invalid_payload' });
      message = 'The body is not a JSON object: no build was created.';
    } else if (!pipeline) {
      Object.assign(delivery, { status: 'failed', reason: 'build_creation_failed' });
      message = 'The pipeline no longer exists.';
    } else if (pipeline.branchConfiguration && !matchesBranchFilter(pipeline.branchConfiguration, branch)) {
      Object.assign(delivery, { status: 'not_run', reason: 'branch_mismatch' });
      message = `Branch "${branch}" does not match the branch filter "${pipeline.branchConfiguration}" of the pipeline: no build was created.`;
    } else {
      try {
        const created = await this.builds.createFromPipelineTrigger(pipeline, {
          commit: trigger.commit ?? 'HEAD',
          branch,
          message: trigger.message ?? 'Triggered build',
          env: trigger.environment,
          metaData: { 'buildkite:webhook': JSON.stringify(call.body) },
        });
        build = { id: created.id, number: created.number, pipelineSlug: pipeline.slug };
        Object.assign(delivery, { status: 'build_created', builds: [{ id: created.id, number: created.number }] });
        message = 'Build created';
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        Object.assign(delivery, { status: 'failed', reason: 'build_creation_failed' });
        message = `No build was created: ${err.message}`;
      }
    }
    await this.triggers.insertDelivery(delivery);
    if (delivery.status === 'failed' && delivery.reason === 'build_creation_failed') throw new UnprocessableError(message);
    const organization = await this.organizations.findById(trigger.organizationId);
    return { delivery, build, message, orgSlug: organization?.slug ?? '' };
  }

  /** GitHub's `X-Hub-Signature-256: sha256=<hex>`, Linear's `Linear-Signature: <hex>`: HMAC-SHA256 of the raw body with the secret. */
  private verify(trigger: PipelineTrigger, call: IncomingCall): void {
    const secret = this.box.open(trigger.verificationSecretSealed!, trigger.id);
    const expected = crypto
      .createHmac('sha256', secret)
      .update(call.rawBody ?? Buffer.alloc(0))
      .digest('hex');
    const sent =
      trigger.type === 'github' ? String(call.headers['x-hub-signature-256'] ?? '').replace(/^sha256=/, '') : String(call.headers['linear-signature'] ?? '');
    const a = Buffer.from(sent);
    const b = Buffer.from(expected);
    if (a.length !== b.length || !crypto.timingSafeEqual(a, b)) throw new SignatureError('Invalid webhook signature');
  }
}
