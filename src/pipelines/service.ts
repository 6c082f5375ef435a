/**
 * The rules of pipelines: who may see, build or edit one, how a create or update body becomes
 * stored fields (slug, steps from YAML or visual steps, provider and its settings, branch
 * filters, teams), archiving, and registering the provider webhook. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { ForbiddenError, NotFoundError, RefusedError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { PipelineSettings } from '../organizations/repository';
import type { OrganizationService } from '../organizations/service';
import { sha256Hex, type Keys } from '../security/keys';
import type { ClusterService } from '../clusters/service';
import { validateBranchFilter } from './branch-filter';
import { ACCESS_LEVELS, memberPermissions } from './permissions';
import { normaliseVisualSteps, parseConfiguration, type NotifyEntry, type ParsedConfiguration, type Step } from './configuration';
import type { GitHubHooks } from './github-hooks';
import { detectProvider, normaliseProviderSettings, repositoryPath, validateProviderSettings, type ProviderId, type ProviderSettings } from './provider';
import type {
  AccessLevel,
  GithubWebhooksDisabled,
  Pipeline,
  PipelineAlong,
  PipelineCounts,
  PipelineFields,
  PipelineRepository,
  ReadOptions,
} from './repository';
import { isValidPipelineSlug, MAX_SLUG_LENGTH, slugify } from './slug';
import type { Actor, Organization, Permissions, Role } from '../core/identity';
import type { PipelineTemplateService } from '../pipeline-templates/service';
import { clock } from '../core/clock';
import { fieldOf } from '../core/guards';
import { changes as changedFields, type AuditActor, type AuditEntry, type AuditLog } from '../audit/service';

/** The create/update body, as the spec admits it (unknown properties are never read). */
export type PipelineInput = components['schemas']['PipelineWritable'] & Partial<Pick<components['schemas']['CreatePipelineRequest'], 'teams' | 'team_uuids'>>;

export interface PipelineServiceOptions {
  publicUrl: string;
  github: GitHubHooks;
  /** Which pipeline templates the caller may assign (the pipeline-templates area, below this one). Default: none exist. */
  templates?: Pick<PipelineTemplateService, 'assignable'>;
  /** What a pipeline's `cluster_id` must name: a cluster of its organization. */
  clusters?: Pick<ClusterService, 'exists' | 'mayManage'>;
  /** Where every change is recorded, in its transaction (src/audit/service.ts). */
  audit?: AuditLog;
}

/** Fields whose before/after the audit log does not hold (large, or values that may be secret): only that they changed. */
const OPAQUE_FIELDS = new Set(['configuration', 'steps', 'env', 'notify', 'providerSettings']);

/** A pipeline's fields as the audit log holds them: the API's names; opaque fields only as changed. */
function pipelineChanges(before: Partial<PipelineFields>, after: Partial<PipelineFields>): Record<string, unknown> {
  const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const plain: Record<string, unknown> = {};
  const was: Record<string, unknown> = {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(after)) {
    if (v === undefined) continue;
    if (OPAQUE_FIELDS.has(k)) {
      if (JSON.stringify(v) !== JSON.stringify(fieldOf(before, k))) out[snake(k)] = { changed: true };
      continue;
    }
    plain[snake(k)] = v;
    was[snake(k)] = fieldOf(before, k);
  }
  return { ...changedFields(was, plain), ...out };
}

const pipelineSubject = (p: { id: string; name: string }) => ({ type: 'Pipeline', id: p.id, name: p.name });

export class PipelineService {
  constructor(
    private readonly pipelines: PipelineRepository,
    private readonly organizations: OrganizationService,
    private readonly keys: Keys,
    private readonly opts: PipelineServiceOptions,
  ) {}

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(actor: AuditActor, change: (pipelines: PipelineRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    const audit = this.opts.audit;
    if (!audit) return change(this.pipelines);
    return audit.transaction(actor, (trx) => change(this.pipelines.withTransaction(trx)), entry);
  }

  /** The webhook token is derived from the server key, so only its hash is ever stored. */
  webhookToken(pipelineId: string): string {
    return this.keys.derive('pipeline-webhook', pipelineId);
  }

  webhookUrl(pipelineId: string): string {
    return `${this.opts.publicUrl}/deliver/${this.webhookToken(pipelineId)}`;
  }

  /** The pipeline whose webhook URL ends in `token`, or null. Looked up by hash: the token is never stored. */
  findByWebhookToken(token: string): Promise<Pipeline | null> {
    return this.pipelines.findByWebhookTokenHash(sha256Hex(token));
  }

  /** The badge URL's key: derived, so it cannot be guessed from the pipeline's id (src/badges serves it). */
  badgeKey(pipelineId: string): string {
    return this.keys.derive('pipeline-badge', pipelineId);
  }

  badgeUrl(pipelineId: string): string {
    return `${this.opts.publicUrl}/badges/${this.badgeKey(pipelineId)}.svg`;
  }

  /**
   * The secret provider webhooks are signed with (GitHub `X-Hub-Signature-256`, Bitbucket
   * `X-Hub-Signature`) or carry (GitLab `X-Gitlab-Token`): derived from the pipeline's id and its
   * secret's generation, never stored. Generation 0 is the secret every pipeline had before
   * rotation existed; a later one derives from `<id>/<generation>`, which no pipeline id (a UUID) is.
   */
  webhookSecret(pipelineId: string, generation: number): string {
    return this.keys.derive('pipeline-webhook-secret', generation === 0 ? pipelineId : `${pipelineId}/${generation}`, 64);
  }

  /** The webhook secret in force, for a caller who may see it (as `provider.webhook_url`: edit permission; the route asks for write_pipelines). */
  async readWebhookSecret(actor: Actor, slug: string): Promise<string> {
    const { pipeline } = await this.getEditable(actor, slug);
    return this.webhookSecret(pipeline.id, pipeline.webhookSecretGeneration);
  }

  /** Replaces the webhook secret with the next generation's: deliveries signed with the old one are refused from now on. */
  async rotateWebhookSecret(actor: Actor, slug: string): Promise<string> {
    const { pipeline } = await this.getEditable(actor, slug);
    return this.nextWebhookSecret(actor, pipeline);
  }

  /**
   * Whether the pipeline processes incoming GitHub webhooks (the docs' "GitHub webhook processing":
   * full access to the pipeline needed to read or change it). `enabled` false disables it, `true`
   * enables it; either is idempotent. Answers the state after the change. As documented, only a
   * GitHub or GitHub Enterprise pipeline has it: another is a 404.
   */
  async githubWebhookProcessing(actor: Actor, slug: string, enabled?: boolean): Promise<{ pipeline: Pipeline; disabled: GithubWebhooksDisabled | null }> {
    const { pipeline } = await this.getEditable(actor, slug);
    if (pipeline.providerId !== 'github' && pipeline.providerId !== 'github_enterprise') throw new NotFoundError('GitHub webhook processing for this pipeline');
    if (enabled === true) await this.pipelines.enableGithubWebhooks(pipeline.id);
    if (enabled === false) await this.pipelines.disableGithubWebhooks(pipeline.id, actor.principal.user.id, clock.now());
    return { pipeline, disabled: await this.pipelines.githubWebhooksDisabled(pipeline.id) };
  }

  /** Whether a GitHub delivery to this pipeline may make builds (the delivery service asks). */
  async processesGithubWebhooks(pipelineId: string): Promise<boolean> {
    return (await this.pipelines.githubWebhooksDisabled(pipelineId)) === null;
  }

  /**
   * The installation's operator (the command line, which may do anything): the webhook secret of
   * the organization's pipeline `slug`, rotated first when asked.
   */
  async operatorWebhookSecret(organizationId: string, slug: string, opts: { rotate: boolean }): Promise<string> {
    const pipeline = await this.pipelines.findBySlug(organizationId, slug);
    if (!pipeline) throw new NotFoundError('pipeline');
    return opts.rotate
      ? this.nextWebhookSecret({ organization: { id: organizationId } }, pipeline)
      : this.webhookSecret(pipeline.id, pipeline.webhookSecretGeneration);
  }

  /** The rotation is recorded (never the secret). */
  private async nextWebhookSecret(actor: AuditActor, pipeline: Pipeline): Promise<string> {
    const generation = await this.audited(
      actor,
      (pipelines) => pipelines.nextWebhookSecretGeneration(pipeline.id),
      () => ({ type: 'PipelineWebhookSecretRotatedEvent', subject: pipelineSubject(pipeline), data: {} }),
    );
    if (generation === null) throw new NotFoundError('pipeline');
    return this.webhookSecret(pipeline.id, generation);
  }

  async permissions(actor: Actor, p: Pipeline): Promise<Permissions> {
    return memberPermissions(this.pipelines, actor.organization, actor.role, actor.principal.user.id, p.id);
  }

  /**
   * What a member of the pipeline's organization may do with it, outside any request: the
   * scheduler acting for a schedule's creator (`role` null: not a member, nothing).
   */
  memberPermissions(organization: Organization, role: Role | null, userId: string, p: Pipeline): Promise<Permissions> {
    return memberPermissions(this.pipelines, organization, role, userId, p.id);
  }

  /** Whether the caller sees the webhook URL: it is a credential. */
  showsWebhookUrl(actor: Actor, perms: Permissions): boolean {
    return perms.edit && actor.principal.token.scopes.includes('write_pipelines');
  }

  /** Whether the caller sees only the pipelines of their teams. */
  isRestricted(actor: Actor): boolean {
    return actor.organization.teamsEnabled && actor.role !== 'admin';
  }

  async list(actor: Actor, filter: { name?: string; repository?: string }, offset: number, limit: number) {
    const restricted = this.isRestricted(actor);
    const page = await this.pipelines.list(
      { organizationId: actor.organization.id, ...filter, visibleToUserId: restricted ? actor.principal.user.id : undefined },
      offset,
      limit,
    );
    const items = await Promise.all(page.items.map(async (p) => ({ pipeline: p, perms: await this.permissions(actor, p) })));
    return { items, total: page.total };
  }

  /** Live build and job counts per pipeline, for responses after a write (reads bring them along). */
  counts(ids: string[]): Promise<Map<string, PipelineCounts>> {
    return this.pipelines.countsFor(ids);
  }

  /** Which of `ids` name pipelines of the organization (archived ones too): what a notification service's `some_projects` scope may list. */
  async idsInOrganization(organizationId: string, ids: string[]): Promise<Set<string>> {
    const uuids = ids.map((id) => id.toLowerCase()).filter((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id));
    return new Set((await this.pipelines.findByIds(uuids)).filter((p) => p.organizationId === organizationId).map((p) => p.id));
  }

  /** A pipeline by its organization and slug, for callers that already hold a credential for it (an agent running one of its jobs). */
  findInOrganization(organizationId: string, slug: string): Promise<Pipeline | null> {
    return this.pipelines.findBySlug(organizationId, slug);
  }

  /**
   * Pipelines by id for the server's own work, with no caller to check (notifications: what a
   * build belongs to). With their counts, as a pipeline's representation shows them.
   */
  findByIdsForSystem(ids: string[]): Promise<Pipeline[]> {
    return this.pipelines.findByIds(ids, { counts: true });
  }

  /** The teams a pipeline is granted to. */
  teamIdsOf(pipelineId: string): Promise<string[]> {
    return this.pipelines.teamIdsOf(pipelineId);
  }

  /** A pipeline the caller may read, or 404 exactly as if it did not exist. */
  async get(actor: Actor, slug: string, opts: ReadOptions = {}): Promise<{ pipeline: Pipeline; perms: Permissions }> {
    return this.readable(actor, await this.pipelines.findBySlug(actor.organization.id, slug, opts));
  }

  /**
   * As `get`, with another area's one-row read about the pipeline (a build of it) made in the
   * same round trip where the store allows (PipelineRepository.findBySlugAlong). What `along`
   * found is only answered once the caller may read the pipeline.
   */
  async getAlong<P extends string, Row, T>(
    actor: Actor,
    slug: string,
    opts: ReadOptions,
    along: PipelineAlong<P, Row, T>,
  ): Promise<{ pipeline: Pipeline; perms: Permissions; along: T | null }> {
    const found = await this.pipelines.findBySlugAlong(actor.organization.id, slug, opts, along);
    return { ...(await this.readable(actor, found?.pipeline ?? null)), along: found?.along ?? null };
  }

  /** The pipeline with the caller's permissions, or 404 exactly as if it did not exist. */
  private async readable(actor: Actor, pipeline: Pipeline | null): Promise<{ pipeline: Pipeline; perms: Permissions }> {
    if (!pipeline) throw new NotFoundError('pipeline');
    const perms = await this.permissions(actor, pipeline);
    if (!perms.read) throw new NotFoundError('pipeline');
    return { pipeline, perms };
  }

  /** Several pipelines at once, each with the caller's permissions in its organization; unreadable ones are left out. */
  async readableByIds(actorByOrg: Map<string, Actor>, ids: string[], opts: ReadOptions = {}): Promise<Map<string, { pipeline: Pipeline; perms: Permissions }>> {
    const result = new Map<string, { pipeline: Pipeline; perms: Permissions }>();
    for (const pipeline of await this.pipelines.findByIds(ids, opts)) {
      const actor = actorByOrg.get(pipeline.organizationId);
      if (!actor) continue;
      const perms = await this.permissions(actor, pipeline);
      if (perms.read) result.set(pipeline.id, { pipeline, perms });
    }
    return result;
  }

  private async getEditable(actor: Actor, slug: string) {
    const found = await this.get(actor, slug);
    if (!found.perms.edit) throw new ForbiddenError();
    return found;
  }

  /** `notices`: attributes of the configuration accepted but not acted on (see configuration/step-attributes.ts). */
  async create(actor: Actor, input: PipelineInput): Promise<{ pipeline: Pipeline; perms: Permissions; notices: string[] }> {
    const errors: FieldError[] = [];
    const name = (input.name ?? '').trim();
    const repository = (input.repository ?? '').trim();
    if (!name) errors.push({ field: 'name', code: "can't be blank" });
    if (!repository) errors.push({ field: 'repository', code: "can't be blank" });
    const slug = this.slugFor(input.slug, name, errors);
    const templateUuid = await this.templateFor(actor, input.pipeline_template_uuid, errors);
    // A blank configuration is a missing one. A template named (assignable or not: its own error
    // says which) stands for the steps.
    const configuration = typeof input.configuration === 'string' && input.configuration.trim() === '' ? undefined : input.configuration;
    if (configuration === undefined && input.steps === undefined && emptyToNull(input.pipeline_template_uuid) === null) {
      // The docs' own code for a configuration missing or blank.
      errors.push({ field: 'configuration', code: 'Step configuration is missing, expected `steps: { yaml: "..." }`' });
    }
    const providerId = detectProvider(repository);
    const fields = this.commonFields(input, providerId, {}, errors);
    const notices: string[] = [];
    const stepsAndEnv = this.stepsAndEnv({ ...input, configuration }, null, errors, notices);
    const teams = await this.teamsFor(actor, input, errors, { creatingPipeline: true });
    // What the request leaves out, the organization's pipeline settings give (issue 30).
    const defaults = await this.organizations.pipelineDefaults(actor.organization.id);
    await this.checkCluster(actor, input, errors, { defaultId: defaults.defaultClusterId ?? null });
    const given = timeoutsOf(input);
    const timeouts = {
      default: given.default !== undefined ? given.default : defaults.defaultTimeoutInMinutes,
      maximum: given.maximum !== undefined ? given.maximum : defaults.maximumTimeoutInMinutes,
    };
    this.checkTimeouts(timeouts.default ?? null, timeouts.maximum ?? null, errors);
    this.checkVisibility(actor, input.visibility, defaults, errors);
    const cloneMirrorUrl = cloneMirrorUrlOf(input, errors);
    if (errors.length) throw new ValidationError(errors);

    const id = crypto.randomUUID();
    const inserted: Parameters<PipelineRepository['insert']>[0] = {
      id,
      organizationId: actor.organization.id,
      createdById: actor.principal.user.id,
      createdAt: clock.now(),
      webhookTokenHash: sha256Hex(this.webhookToken(id)),
      name,
      slug,
      repository,
      cloneMirrorUrl: cloneMirrorUrl ?? null,
      providerId,
      providerSettings: fields.providerSettings ?? {},
      description: input.description ?? null,
      emoji: emptyToNull(input.emoji) ?? null,
      color: colorOf(input, errors) ?? null,
      defaultBranch: input.default_branch ?? defaults.defaultBranch ?? 'main',
      branchConfiguration: emptyToNull(input.branch_configuration),
      skipQueuedBranchBuilds: input.skip_queued_branch_builds ?? false,
      skipQueuedBranchBuildsFilter: emptyToNull(input.skip_queued_branch_builds_filter),
      cancelRunningBranchBuilds: input.cancel_running_branch_builds ?? false,
      cancelRunningBranchBuildsFilter: emptyToNull(input.cancel_running_branch_builds_filter),
      allowRebuilds: input.allow_rebuilds ?? true,
      clusterId: input.cluster_id === undefined ? defaults.defaultClusterId : clusterIdOf(input.cluster_id),
      pipelineTemplateUuid: templateUuid ?? null,
      visibility: input.visibility ?? 'private',
      tags: uniqueTags(input.tags) ?? null,
      defaultTimeoutInMinutes: timeouts.default ?? null,
      maximumTimeoutInMinutes: timeouts.maximum ?? null,
      // With a template and no steps of its own, the pipeline has none: the template's govern its builds.
      ...(stepsAndEnv ?? { configuration: null, steps: [], env: {}, notify: [] }),
    };
    await this.audited(
      actor,
      (pipelines) => pipelines.insert(inserted, teams),
      () => ({ type: 'PipelineCreatedEvent', subject: pipelineSubject({ id, name }), data: pipelineChanges({}, inserted) }),
    );
    const pipeline = (await this.pipelines.findById(id))!;
    return { pipeline, perms: await this.permissions(actor, pipeline), notices };
  }

  async update(actor: Actor, slug: string, input: PipelineInput): Promise<{ pipeline: Pipeline; perms: Permissions; notices: string[] }> {
    const { pipeline: current, perms } = await this.getEditable(actor, slug);
    if (current.archivedAt) throw new UnprocessableError('This pipeline is archived: unarchive it before updating it.');
    const errors: FieldError[] = [];
    const changes: Partial<PipelineFields> = {};

    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) errors.push({ field: 'name', code: "can't be blank" });
      else changes.name = name;
    }
    // As the real API: a new name without a `slug` renames the slug too.
    if (input.slug !== undefined) changes.slug = this.slugFor(input.slug, '', errors);
    else if (changes.name !== undefined && changes.name !== current.name) changes.slug = this.slugFor(undefined, changes.name, errors);
    let providerId = current.providerId;
    let keptSettings = current.providerSettings;
    if (input.repository !== undefined) {
      const repository = input.repository.trim();
      if (!repository) errors.push({ field: 'repository', code: "can't be blank" });
      else {
        changes.repository = repository;
        providerId = detectProvider(repository);
        // Settings of the old provider kind mean nothing for the new one.
        if (providerId !== current.providerId) keptSettings = {};
      }
    }
    const fields = this.commonFields(input, providerId, keptSettings, errors);
    if (providerId !== current.providerId) changes.providerId = providerId;
    if (fields.providerSettings !== undefined || providerId !== current.providerId) changes.providerSettings = fields.providerSettings ?? keptSettings;
    const notices: string[] = [];
    const stepsAndEnv = this.stepsAndEnv(input, current, errors, notices);
    if (stepsAndEnv) Object.assign(changes, stepsAndEnv);
    await this.checkCluster(actor, input, errors, { current: current.clusterId });
    if (input.visibility === 'public' && current.visibility !== 'public') {
      this.checkVisibility(actor, input.visibility, await this.organizations.pipelineDefaults(actor.organization.id), errors);
    }

    const copy = <K extends keyof PipelineFields>(key: K, value: PipelineFields[K] | undefined) => {
      if (value !== undefined) changes[key] = value;
    };
    copy('description', input.description);
    copy('emoji', input.emoji === undefined ? undefined : emptyToNull(input.emoji));
    copy('color', colorOf(input, errors));
    copy('cloneMirrorUrl', cloneMirrorUrlOf(input, errors));
    copy('defaultBranch', input.default_branch);
    copy('branchConfiguration', input.branch_configuration === undefined ? undefined : emptyToNull(input.branch_configuration));
    copy('skipQueuedBranchBuilds', input.skip_queued_branch_builds);
    copy(
      'skipQueuedBranchBuildsFilter',
      input.skip_queued_branch_builds_filter === undefined ? undefined : emptyToNull(input.skip_queued_branch_builds_filter),
    );
    copy('cancelRunningBranchBuilds', input.cancel_running_branch_builds);
    copy(
      'cancelRunningBranchBuildsFilter',
      input.cancel_running_branch_builds_filter === undefined ? undefined : emptyToNull(input.cancel_running_branch_builds_filter),
    );
    copy('allowRebuilds', input.allow_rebuilds);
    copy('clusterId', input.cluster_id === undefined ? undefined : clusterIdOf(input.cluster_id));
    if (input.pipeline_template_uuid !== undefined) changes.pipelineTemplateUuid = await this.templateFor(actor, input.pipeline_template_uuid, errors);
    copy('visibility', input.visibility);
    copy('tags', uniqueTags(input.tags));
    const timeouts = timeoutsOf(input);
    copy('defaultTimeoutInMinutes', timeouts.default);
    copy('maximumTimeoutInMinutes', timeouts.maximum);
    this.checkTimeouts(
      changes.defaultTimeoutInMinutes !== undefined ? changes.defaultTimeoutInMinutes : current.defaultTimeoutInMinutes,
      changes.maximumTimeoutInMinutes !== undefined ? changes.maximumTimeoutInMinutes : current.maximumTimeoutInMinutes,
      errors,
    );
    // As the docs' update: `teams` adds the pipeline to those teams (with the access level named); it takes none away.
    const teams = input.teams !== undefined || input.team_uuids !== undefined ? await this.teamsFor(actor, input, errors, { adding: true }) : [];
    if (errors.length) throw new ValidationError(errors);

    await this.audited(
      actor,
      (pipelines) => pipelines.update(current, changes, { teams, at: clock.now() }),
      () => ({
        type: 'PipelineUpdatedEvent',
        subject: pipelineSubject({ id: current.id, name: changes.name ?? current.name }),
        data: pipelineChanges(current, changes),
      }),
    );
    return { pipeline: (await this.pipelines.findById(current.id))!, perms, notices };
  }

  async archive(actor: Actor, slug: string) {
    const { pipeline, perms } = await this.getEditable(actor, slug);
    await this.audited(
      actor,
      async (pipelines) => {
        if (!(await pipelines.setArchivedAt(pipeline.id, clock.now(), false))) throw new UnprocessableError('Pipeline could not be archived.');
      },
      () => ({ type: 'PipelineArchivedEvent', subject: pipelineSubject(pipeline), data: { archived: true } }),
    );
    return { pipeline: (await this.pipelines.findById(pipeline.id))!, perms };
  }

  async unarchive(actor: Actor, slug: string) {
    const { pipeline, perms } = await this.getEditable(actor, slug);
    await this.audited(
      actor,
      async (pipelines) => {
        if (!(await pipelines.setArchivedAt(pipeline.id, null, true))) throw new UnprocessableError('Pipeline could not be unarchived.');
      },
      () => ({ type: 'PipelineUnarchivedEvent', subject: pipelineSubject(pipeline), data: { archived: false } }),
    );
    return { pipeline: (await this.pipelines.findById(pipeline.id))!, perms };
  }

  async delete(actor: Actor, slug: string): Promise<void> {
    const { pipeline } = await this.getEditable(actor, slug);
    await this.audited(
      actor,
      (pipelines) => pipelines.delete(pipeline.id),
      () => ({ type: 'PipelineDeletedEvent', subject: pipelineSubject(pipeline), data: { name: pipeline.name, slug: pipeline.slug } }),
    );
  }

  /**
   * Registers a hook on the GitHub repository for every event some trigger_mode builds from, so
   * changing the mode later needs no new hook; returns the delivery URL.
   */
  async addWebhook(actor: Actor, slug: string): Promise<string> {
    const { pipeline } = await this.getEditable(actor, slug);
    if (pipeline.providerId !== 'github' && pipeline.providerId !== 'github_enterprise') {
      throw new UnprocessableError('Auto-creating webhooks is not supported for your repository.');
    }
    const repo = repositoryPath(pipeline.repository);
    const url = this.webhookUrl(pipeline.id);
    const ok =
      repo !== null &&
      (await this.opts.github.createHook(pipeline.providerId, repo, {
        url,
        secret: this.webhookSecret(pipeline.id, pipeline.webhookSecretGeneration),
        events: ['push', 'pull_request', 'deployment', 'fork'],
      }));
    if (!ok) throw new UnprocessableError('Webhooks could not be created for your repository.');
    return url;
  }

  /**
   * The template `pipeline_template_uuid` names, as stored (null: none), checked: a template of
   * this organization, `available` unless the caller is an administrator.
   */
  private async templateFor(actor: Actor, value: string | null | undefined, errors: FieldError[]): Promise<string | null | undefined> {
    const uuid = emptyToNull(value);
    if (uuid === null) return value === undefined ? undefined : null;
    const template = await this.opts.templates?.assignable(actor, uuid);
    if (!template) {
      errors.push({
        field: 'pipeline_template_uuid',
        code:
          actor.role === 'admin'
            ? 'is not a pipeline template of this organization'
            : 'is not a pipeline template of this organization available to members (an administrator can make it available)',
      });
      return undefined;
    }
    return template.id;
  }

  private slugFor(explicit: string | undefined, name: string, errors: FieldError[]): string {
    if (explicit !== undefined) {
      if (!isValidPipelineSlug(explicit))
        errors.push({ field: 'slug', code: `is invalid: use letters, digits and dashes, not starting with a dash, at most ${MAX_SLUG_LENGTH} characters` });
      return explicit;
    }
    const slug = slugify(name);
    if (name && !slug) errors.push({ field: 'name', code: 'must contain at least one letter or digit' });
    return slug;
  }

  /** Provider settings and branch filters, shared by create and update. */
  private commonFields(input: PipelineInput, providerId: ProviderId, kept: ProviderSettings, errors: FieldError[]) {
    for (const field of ['branch_configuration', 'skip_queued_branch_builds_filter', 'cancel_running_branch_builds_filter'] as const) {
      const value = input[field];
      if (value) {
        const reason = validateBranchFilter(value);
        if (reason) errors.push({ field, code: reason });
      }
    }
    if (input.provider_settings === undefined) return { providerSettings: undefined };
    const settingErrors = validateProviderSettings(providerId, input.provider_settings);
    errors.push(...settingErrors);
    if (settingErrors.length) return { providerSettings: undefined };
    return { providerSettings: { ...kept, ...normaliseProviderSettings(providerId, input.provider_settings) } };
  }

  /**
   * Steps and env come from exactly one place: the YAML `configuration`, or visual `steps`
   * with `env`. See the updatePipeline description in the spec for the rules.
   */
  private stepsAndEnv(
    input: PipelineInput,
    current: Pipeline | null,
    errors: FieldError[],
    notices: string[],
  ): { configuration: string | null; steps: Step[]; env: Record<string, string>; notify: NotifyEntry[] } | undefined {
    const collect = (fn: () => void) => {
      try {
        fn();
      } catch (err) {
        if (err instanceof ValidationError) errors.push(...err.errors);
        else throw err;
      }
    };
    // As the real API's update: `configuration` wins over `steps` and `env` sent beside it, and a
    // YAML pipeline ignores `env` (its env is the YAML's top-level one) but refuses `steps` alone.
    const ignored = (field: 'steps' | 'env', why: string) => {
      if (input[field] !== undefined) notices.push(`${field} was ignored: ${why}`);
    };
    if (input.configuration !== undefined) {
      ignored('steps', 'the configuration defines the steps');
      ignored('env', "the configuration's top-level env is the pipeline env");
      let parsed: ParsedConfiguration | undefined;
      collect(() => (parsed = parseConfiguration(input.configuration!)));
      if (!parsed) return undefined;
      notices.push(...parsed.notices);
      return { configuration: input.configuration, steps: parsed.steps, env: parsed.env, notify: parsed.notify };
    }
    const yamlDefined = current?.configuration != null;
    if (yamlDefined) {
      if (input.steps !== undefined) errors.push({ field: 'steps', code: 'is defined by the configuration of this pipeline: send configuration instead' });
      ignored('env', "this pipeline's env is its configuration's top-level env");
      return undefined;
    }
    if (input.steps === undefined && input.env === undefined) return undefined;
    let steps = current?.steps ?? [];
    if (input.steps !== undefined) collect(() => (steps = normaliseVisualSteps(input.steps!)));
    // Visual steps have no top level: a pipeline defined by them has no build-level notify.
    return { configuration: null, steps, env: input.env ?? current?.env ?? {}, notify: [] };
  }

  /**
   * A `cluster_id` (other than empty, which means none) must name a cluster of the organization.
   * Putting a pipeline in a cluster, or taking it out of one, is for an administrator or that
   * cluster's maintainer (403), as the docs' cluster permissions have it ("Creating a pipeline in
   * any other cluster also requires cluster maintainer access"): a cluster's jobs can read its
   * secrets. The organization's default cluster, where a new pipeline goes anyway, needs neither.
   */
  private async checkCluster(
    actor: Actor,
    input: PipelineInput,
    errors: FieldError[],
    from: { current: string | null } | { defaultId: string | null },
  ): Promise<void> {
    const clusters = this.opts.clusters;
    if (input.cluster_id === undefined || !clusters) return;
    const id = clusterIdOf(input.cluster_id);
    if (id && !(await clusters.exists(actor.organization.id, id))) {
      errors.push({ field: 'cluster_id', code: 'is not a cluster of this organization' });
      return;
    }
    const moved = 'current' in from ? (id === from.current ? [] : [id, from.current]) : id === from.defaultId ? [] : [id];
    for (const cluster of moved) {
      if (cluster && !(await clusters.mayManage(actor, cluster)))
        throw new RefusedError("Only the cluster's maintainers and organization administrators can move pipelines into or out of this cluster.");
    }
  }

  private async teamsFor(
    actor: Actor,
    input: PipelineInput,
    errors: FieldError[],
    opts: { creatingPipeline?: boolean; adding?: boolean } = {},
  ): Promise<{ teamId: string; accessLevel: AccessLevel }[]> {
    const field = input.teams !== undefined ? 'teams' : 'team_uuids';
    const requested = (input.teams ?? input.team_uuids ?? []).map((t): { id: string; access_level: AccessLevel } =>
      typeof t === 'string' ? { id: t, access_level: 'manage_build_and_read' } : { id: t.id, access_level: t.access_level ?? 'manage_build_and_read' },
    );
    const isAdmin = actor.role === 'admin';
    // A new pipeline of a teams organization needs a team of the creator's; an update adds to those it has.
    if (actor.organization.teamsEnabled && !isAdmin && requested.length === 0 && !opts.adding) {
      errors.push({ field: 'teams', code: "can't be blank: this organization uses teams, so name at least one team of yours" });
      return [];
    }
    const checks = await this.organizations.checkTeams(
      actor,
      requested.map((t) => t.id),
      { creatingPipeline: opts.creatingPipeline },
    );
    const result = new Map<string, AccessLevel>();
    for (const [i, t] of requested.entries()) {
      if (!ACCESS_LEVELS.includes(t.access_level)) {
        errors.push({ field: `${field}[${i}].access_level`, code: 'is not included in the list' });
        continue;
      }
      const check = checks[i]!;
      if ('code' in check) errors.push({ field: `${field}[${i}]`, code: check.code });
      else result.set(check.team.id, t.access_level);
    }
    return [...result].map(([teamId, accessLevel]) => ({ teamId, accessLevel }));
  }

  /** With public pipeline creation off (the organization's pipeline settings), only administrators make a pipeline public. */
  private checkVisibility(actor: Actor, visibility: string | undefined, settings: PipelineSettings, errors: FieldError[]) {
    if (visibility === 'public' && actor.role !== 'admin' && settings.switches.public_pipelines.enabledAt === null) {
      errors.push({ field: 'visibility', code: "can't be public: public pipeline creation is off for this organization's members" });
    }
  }

  private checkTimeouts(def: number | null, max: number | null, errors: FieldError[]) {
    if (def !== null && max !== null && def > max) {
      errors.push({ field: 'default_command_step_timeout', code: `must not be greater than maximum_command_step_timeout (${max})` });
    }
  }
}

/**
 * The step timeouts under the real API's names (`default_command_step_timeout`,
 * `maximum_command_step_timeout`) or this service's older ones (`*_timeout_in_minutes`); the
 * real API's name wins when both are sent. undefined: not given; null: cleared.
 */
function timeoutsOf(
  input: Pick<PipelineInput, 'default_command_step_timeout' | 'maximum_command_step_timeout' | 'default_timeout_in_minutes' | 'maximum_timeout_in_minutes'>,
): {
  default: number | null | undefined;
  maximum: number | null | undefined;
} {
  return {
    default: input.default_command_step_timeout !== undefined ? input.default_command_step_timeout : input.default_timeout_in_minutes,
    maximum: input.maximum_command_step_timeout !== undefined ? input.maximum_command_step_timeout : input.maximum_timeout_in_minutes,
  };
}

/**
 * A `clone_mirror_url` as sent: undefined when not sent, null to remove (`null` or blank), or the
 * URL; a field error when it carries credentials, a query or a fragment (pipelines.md).
 */
const SSH_SCHEMES: readonly string[] = ['ssh:', 'git+ssh:', 'ssh+git:'];

/** The docs' tags page: "up to 10 unique tags": one given twice is kept once, in the order first given. */
function uniqueTags(tags: string[] | null | undefined): string[] | null | undefined {
  return tags ? [...new Set(tags)] : tags;
}

/** The docs' `color`, "a color hex code" (`#FF5733`), stored upper-case; `null` or `""` removes it. */
function colorOf(input: PipelineInput, errors: FieldError[]): string | null | undefined {
  if (input.color === undefined) return undefined;
  const color = emptyToNull(input.color)?.trim() ?? null;
  if (color === null) return null;
  if (/^#[0-9a-f]{6}$/i.test(color)) return color.toUpperCase();
  errors.push({ field: 'color', code: 'must be a hex color code such as #FF5733' });
  return undefined;
}

function cloneMirrorUrlOf(input: PipelineInput, errors: FieldError[]): string | null | undefined {
  if (input.clone_mirror_url === undefined) return undefined;
  const url = emptyToNull(input.clone_mirror_url)?.trim() ?? null;
  if (url === null) return null;
  const refuse = (why: string) => errors.push({ field: 'clone_mirror_url', code: `must not contain ${why}` });
  // A URL with a scheme, or scheme-relative (`//host/path`); else scp-like `user@host:path`.
  const urlForm = /^([a-z][a-z0-9+.-]*:)?\/\//i.exec(url);
  if (/\s/.test(url)) errors.push({ field: 'clone_mirror_url', code: 'is not a repository URL' });
  else if (urlForm) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(urlForm[1] ? url : `ssh:${url}`);
    } catch {
      errors.push({ field: 'clone_mirror_url', code: 'is not a repository URL' });
    }
    if (parsed) {
      // A user name alone is how ssh URLs name the account (git@); anywhere else it is a credential.
      if (parsed.password || (parsed.username && !SSH_SCHEMES.includes(parsed.protocol))) refuse('credentials');
      else if (parsed.search || url.includes('?')) refuse('a query');
      else if (parsed.hash || url.includes('#')) refuse('a fragment');
    }
  } else if (url.includes('?')) refuse('a query');
  else if (url.includes('#')) refuse('a fragment');
  // scp-like `user@host:path`: only a user name before the `@`.
  else if (/^[^@/]*:[^@/]*@/.test(url)) refuse('credentials');
  return url;
}

/** A `cluster_id` as stored and compared: a UUID in lower case (clients may send upper case), null for none. */
function clusterIdOf(v: string | null): string | null {
  return emptyToNull(v)?.toLowerCase() ?? null;
}

function emptyToNull(v: string | null | undefined): string | null {
  return v === undefined || v === null || v.trim() === '' ? null : v;
}
