/**
 * The rules of test suites: who may see or change one (Teams), how a create or update body
 * becomes stored fields (slug, teams, the upload API token), and the reads of a suite's runs,
 * tests (with their metrics over a window, ./test-metrics), a build's tests and flaky tests.
 * No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components, operations } from '../../generated/api';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { OrganizationService } from '../organizations/service';
import { slugify } from '../pipelines/slug';
import { sha256Hex } from '../security/keys';
import type { Suite, SuiteFields, SuiteRepository } from './repository';
import {
  addExecution,
  type BuildRun,
  type ExecutionTotals,
  type SuiteResultsRepository,
  type SuiteTest,
  type TestExecution,
  type TestIdentity,
  type TestState,
  type TimeWindow,
  type WindowRun,
} from './results-repository';
import type { Actor } from '../core/identity';
import type { Build } from '../builds/model';
import type { PipelineService } from '../pipelines/service';
import {
  branchPasses,
  executionPasses,
  filtersTags,
  parseFilters,
  resultPasses,
  runPasses,
  testPasses,
  type RawFilters,
  type TestFilters,
} from './test-filters';
import {
  BUILD_WINDOW_MS,
  groupPasses,
  metricsOf,
  sortTests,
  wantsMetrics,
  windowOf,
  type ListTestsQuery,
  type MeasuredTest,
  type SortBy,
  type TestList,
  type TestMetrics,
  type WindowQuery,
  PERIOD_MS,
} from './test-metrics';
import { clock } from '../core/clock';
import { tagFaultField, tagFaults } from './tag-rules';
import { isUuid } from '../core/uuid';
import { parseOidcPolicy } from './oidc-policy';
import type { SecretBox } from '../security/secret-box';
import { changes as changedFields, type AuditEntry, type AuditLog } from '../audit/service';

type CreateInput = components['schemas']['CreateSuiteRequest'];
type LabelsInput = components['schemas']['TestLabelsRequest'];
type FindInput = components['schemas']['FindTestRequest'];
type ExecutionTagsInput = components['schemas']['ExecutionTagsRequest'];

/** A test has at most this many labels given through the API (detection's `flaky` aside). */
export const MAX_TEST_LABELS = 10;
/** At most this many executions of a test in a build's tests with `include=executions`. */
const MAX_EXECUTIONS_PER_TEST = 100;

/** What `include` adds to a build's tests. */
export interface BuildTestIncludes {
  executions?: TestExecution[];
  latestFail?: TestExecution | null;
}

/**
 * A test's labels as the answers show them: `flaky` first when flaky detection found the test
 * flaky or it was given (tests.md's example adds it), then the others given.
 */
export function labelsOf(test: Pick<TestIdentity, 'labels'>, flaky: boolean): string[] {
  const others = test.labels.filter((l) => l !== 'flaky');
  return flaky || others.length < test.labels.length ? ['flaky', ...others] : test.labels;
}
type UpdateInput = components['schemas']['UpdateSuiteRequest'];

export type FlakyPeriod = NonNullable<NonNullable<operations['listFlakyTests']['parameters']['query']>['period']>;

/** How a build's tests find the build, and whether the caller may see its pipeline. */
export interface BuildLookup {
  findById(id: string): Promise<Build | null>;
}

/** A suite API token: 24 random bytes, so a plain SHA-256 is enough to store and look it up by. */
export function newSuiteToken(): string {
  return crypto.randomBytes(24).toString('base64url');
}

export class SuiteService {
  constructor(
    private readonly suites: SuiteRepository,
    private readonly results: SuiteResultsRepository,
    private readonly organizations: OrganizationService,
    private readonly builds: BuildLookup,
    private readonly pipelines: Pick<PipelineService, 'readableByIds'>,
    /** Seals the upload tokens kept to be shown again (`show_api_token`), each bound to its suite. */
    private readonly tokenBox: SecretBox,
    /** Where every change is recorded, in its transaction (src/audit/service.ts); never the upload token. */
    private readonly audit: AuditLog | null = null,
  ) {}

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(actor: Actor, change: (suites: SuiteRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    if (!this.audit) return change(this.suites);
    return this.audit.transaction(actor, (trx) => change(this.suites.withTransaction(trx)), entry);
  }

  /** The suite an upload API token belongs to (only its SHA-256 is stored), with its organization's slug. */
  async findByUploadToken(apiToken: string): Promise<{ suite: Suite; orgSlug: string } | null> {
    return this.suites.findByTokenHash(sha256Hex(apiToken));
  }

  /** A suite by its organization's slug and its own, with no caller's access to check (an OIDC token's audience names it). */
  async findBySlugs(orgSlug: string, suiteSlug: string): Promise<{ suite: Suite; orgSlug: string } | null> {
    return this.suites.findBySlugs(orgSlug, suiteSlug);
  }

  /** Non-admins of a Teams-enabled organization see only the suites of their teams. */
  private isRestricted(actor: Actor): boolean {
    return actor.organization.teamsEnabled && actor.role !== 'admin';
  }

  async list(actor: Actor, offset: number, limit: number) {
    return this.suites.list(actor.organization.id, this.isRestricted(actor) ? actor.principal.user.id : undefined, offset, limit);
  }

  /** A suite the caller may see, or 404 exactly as if it did not exist. */
  async get(actor: Actor, slug: string): Promise<Suite> {
    const suite = await this.suites.findBySlug(actor.organization.id, slug);
    if (!suite) throw new NotFoundError('suite');
    if (this.isRestricted(actor) && !(await this.suites.isGrantedTo(suite.id, actor.principal.user.id))) throw new NotFoundError('suite');
    return suite;
  }

  async create(actor: Actor, input: CreateInput): Promise<{ suite: Suite; apiToken: string }> {
    const errors: FieldError[] = [];
    const name = (input.name ?? '').trim();
    if (!name) errors.push({ field: 'name', code: "can't be blank" });
    const slug = slugify(name);
    if (name && !slug) errors.push({ field: 'name', code: 'must contain at least one letter or digit' });
    const oidcPolicy = parseOidcPolicy(input.oidc_policy, errors);
    const teamIds = await this.teamsFor(actor, input, errors);
    if (errors.length) throw new ValidationError(errors);

    const id = crypto.randomUUID();
    const apiToken = newSuiteToken();
    const fields = {
      id,
      organizationId: actor.organization.id,
      slug,
      createdById: actor.principal.user.id,
      createdAt: clock.now(),
      apiTokenHash: sha256Hex(apiToken),
      apiTokenSealed: this.tokenBox.seal(apiToken, id),
      name,
      defaultBranch: input.default_branch ?? 'main',
      applicationName: input.application_name ?? null,
      color: input.color ?? null,
      emoji: input.emoji ?? null,
      oidcPolicy,
    };
    await this.audited(
      actor,
      (suites) => suites.insert(fields, teamIds),
      () => ({
        type: 'SuiteCreatedEvent',
        subject: suiteSubject(fields),
        data: { ...suiteData(fields), slug, teams: teamIds },
      }),
    );
    return { suite: (await this.suites.findById(id))!, apiToken };
  }

  /**
   * The upload tokens of these suites the caller may change (the docs' `show_api_token`), by
   * suite id. A suite made before tokens were kept sealed has none to show.
   */
  async apiTokens(actor: Actor, suites: Suite[]): Promise<Map<string, string>> {
    const ids = suites.map((s) => s.id);
    return this.openTokens(this.isRestricted(actor) ? [...(await this.suites.editableAmong(ids, actor.principal.user.id))] : ids);
  }

  /** The upload token of a suite the caller found with `get`: a 403 unless they may change it ("a 403 ... if the user does not have permission to view the suite's API token"). */
  async apiToken(actor: Actor, suite: Suite): Promise<string | undefined> {
    if (!(await this.mayEdit(actor, suite))) throw new ForbiddenError();
    return (await this.openTokens([suite.id])).get(suite.id);
  }

  private async openTokens(ids: string[]): Promise<Map<string, string>> {
    const sealed = await this.suites.sealedTokens(ids);
    return new Map([...sealed].map(([id, value]) => [id, this.tokenBox.open(value, id)]));
  }

  /** Whether the caller may change a suite they can see: an admin, or one of their teams has `edit` on it. */
  private async mayEdit(actor: Actor, suite: Suite): Promise<boolean> {
    return !this.isRestricted(actor) || this.suites.isEditableBy(suite.id, actor.principal.user.id);
  }

  /** A suite the caller may change: found as `get` finds it, then 403 unless an admin or one of their teams has `edit` on it. */
  private async getEditable(actor: Actor, slug: string): Promise<Suite> {
    const suite = await this.get(actor, slug);
    if (!(await this.mayEdit(actor, suite))) throw new ForbiddenError();
    return suite;
  }

  /**
   * A suite of the caller's organization by id, for a team grant: null when there is none or the
   * caller may not see it (a grant then names it like an unknown one), else whether they may edit it.
   */
  async forGrant(actor: Actor, id: string): Promise<{ suite: Suite; editable: boolean } | null> {
    const suite = isUuid(id) ? await this.suites.findById(id.toLowerCase()) : null;
    if (!suite || suite.organizationId !== actor.organization.id) return null;
    if (!this.isRestricted(actor)) return { suite, editable: true };
    if (!(await this.suites.isGrantedTo(suite.id, actor.principal.user.id))) return null;
    return { suite, editable: await this.suites.isEditableBy(suite.id, actor.principal.user.id) };
  }

  async update(actor: Actor, slug: string, input: UpdateInput): Promise<Suite> {
    const suite = await this.getEditable(actor, slug);
    const changes: Partial<SuiteFields> = {
      defaultBranch: input.default_branch,
      applicationName: input.application_name,
      color: input.color,
      emoji: input.emoji,
    };
    const errors: FieldError[] = [];
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) errors.push({ field: 'name', code: "can't be blank" });
      changes.name = name;
    }
    if (input.oidc_policy !== undefined) changes.oidcPolicy = parseOidcPolicy(input.oidc_policy, errors);
    if (errors.length) throw new ValidationError(errors);
    await this.audited(
      actor,
      (suites) => suites.update(suite.id, changes),
      () => ({
        type: 'SuiteUpdatedEvent',
        subject: suiteSubject({ id: suite.id, name: changes.name ?? suite.name }),
        data: changedFields(suiteData(suite), suiteData(changes)),
      }),
    );
    return (await this.suites.findById(suite.id))!;
  }

  async delete(actor: Actor, slug: string): Promise<void> {
    const suite = await this.getEditable(actor, slug);
    await this.audited(
      actor,
      (suites) => suites.delete(suite.id),
      () => ({ type: 'SuiteDeletedEvent', subject: suiteSubject(suite), data: { name: suite.name, slug: suite.slug } }),
    );
  }

  /** A suite's runs, newest first; `buildId`: only that Buildkite build's (the spec checks it is a UUID). */
  async runs(actor: Actor, slug: string, filter: { buildId?: string }, offset: number, limit: number) {
    return this.results.listRuns((await this.get(actor, slug)).id, { buildId: filter.buildId?.toLowerCase() }, offset, limit);
  }

  async run(actor: Actor, slug: string, runId: string) {
    const suite = await this.get(actor, slug);
    const run = isUuid(runId) ? await this.results.findRun(suite.id, runId.toLowerCase()) : null;
    if (!run) throw new NotFoundError('run');
    return run;
  }

  /** A run's failed executions in upload order, `limit` of them from `offset`. */
  async failedExecutions(actor: Actor, slug: string, runId: string, offset: number, limit: number) {
    return this.results.failedExecutions(await this.run(actor, slug, runId), offset, limit);
  }

  /** A test of the suite; with metrics over the window when the version asks for them. */
  async testOf(actor: Actor, slug: string, testId: string, version: string | undefined, q: WindowQuery) {
    const versioned = wantsMetrics(version);
    const window = versioned ? windowOf(q) : undefined;
    const suite = await this.get(actor, slug);
    const test = isUuid(testId) ? await this.results.findTestIdentity(suite.id, testId.toLowerCase()) : null;
    if (!test) throw new NotFoundError('test');
    const labels = labelsOf(test, test.flaky);
    if (!window) return { versioned: false as const, test, labels };
    return { versioned: true as const, test, labels, metrics: metricsOf(await this.results.totalsOfTest(test.id, window)) };
  }

  /**
   * A test's history for its page: its latest `limit` executions with their runs, the reliability
   * over them (passed of passed and failed, null with neither), and the metrics of the last 7
   * days as the API's versioned `getTest` measures them.
   */
  async testHistory(actor: Actor, slug: string, testId: string, limit: number) {
    const { test, labels } = await this.testOf(actor, slug, testId, undefined, {});
    const [executions, totals] = await Promise.all([
      this.results.recentExecutionsOfTest(test.id, limit),
      this.results.totalsOfTest(test.id, windowOf({ period: '7days' })),
    ]);
    const passed = executions.filter((e) => e.result === 'passed').length;
    const failed = executions.filter((e) => e.result === 'failed').length;
    return { test, labels, executions, reliability: passed + failed ? passed / (passed + failed) : null, week: metricsOf(totals) };
  }

  /**
   * A suite's tests. Legacy (no metrics): every test, newest first, `label` only. With metrics:
   * the tests with executions in the window that pass the filters, sorted, paged in memory.
   */
  async listTests(actor: Actor, slug: string, version: string | undefined, q: ListTestsQuery, offset: number, limit: number): Promise<TestList> {
    const versioned = wantsMetrics(version);
    if (!versioned) {
      const suite = await this.get(actor, slug);
      const { items, total } = await this.results.listTestIdentities(suite.id, q.label, offset, limit);
      return { versioned: false, items: items.map((t) => ({ test: t, labels: labelsOf(t, t.flaky) })), total };
    }
    if (q.label !== undefined && q.labels !== undefined) throw new UnprocessableError('label cannot be combined with labels');
    const window = windowOf(q);
    const filters = parseFilters({ ...q, labels: q.labels ?? q.label });
    const suite = await this.get(actor, slug);
    const runs = await this.results.runsInWindow([suite.id], window);
    const measured = await this.measure(runs, window, filters, new Map([[suite.id, suite.slug]]));
    const sorted = sortTests(measured, q.sort_by ?? 'duration_avg', q.order ?? 'desc');
    return { versioned: true, items: sorted.slice(offset, offset + limit), total: sorted.length };
  }

  /**
   * The tests of a build (its UUID) in every suite of the organization the caller may see with
   * a run of it, measured over the build's window. A build the caller may not see is a 404.
   */
  async buildTests(
    actor: Actor,
    buildId: string,
    q: RawFilters & { sort_by?: SortBy; order?: 'asc' | 'desc'; include?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: (MeasuredTest & BuildTestIncludes)[]; total: number }> {
    const filters = parseFilters(q);
    const include = new Set(
      (q.include ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
    for (const v of include) {
      if (v !== 'executions' && v !== 'latest_fail') throw new UnprocessableError(`include must be executions or latest_fail: ${v}`);
    }
    const build = isUuid(buildId) ? await this.builds.findById(buildId.toLowerCase()) : null;
    if (!build || build.organizationId !== actor.organization.id) throw new NotFoundError('build');
    const readable = await this.pipelines.readableByIds(new Map([[actor.organization.id, actor]]), [build.pipelineId]);
    if (!readable.has(build.pipelineId)) throw new NotFoundError('build');
    const created = build.createdAt.getTime();
    const end = Math.min(build.finishedAt?.getTime() ?? clock.nowMs(), created + BUILD_WINDOW_MS);
    const window = { from: build.createdAt, to: new Date(Math.max(end, created)) };
    const buildRuns = await this.results.buildRuns(actor.organization.id, [build.id], this.isRestricted(actor) ? actor.principal.user.id : undefined);
    const slugs = new Map(buildRuns.map((r) => [r.suiteId, r.suiteSlug]));
    const runs = await this.results.runsInWindow([...slugs.keys()], window, build.id);
    const measured = await this.measure(runs, window, filters, slugs);
    const sorted = sortTests(measured, q.sort_by ?? 'duration_avg', q.order ?? 'desc');
    const page: (MeasuredTest & BuildTestIncludes)[] = sorted.slice(offset, offset + limit);
    if (include.size && page.length) {
      // The executions the metrics counted: each weighed with its own tags over its run's.
      const byId = new Map(runs.filter((r) => branchPasses(r, filters)).map((r) => [r.id, r]));
      const counted = (e: TestExecution) => executionPasses(byId.get(e.runId)!, e.tags, filters);
      const runIds = [...byId.keys()];
      const testIds = page.map((t) => t.test.id);
      if (include.has('executions')) {
        // The `result` tag's `!` and `*` apply to them too.
        const all = await this.results.executionsOf(runIds, testIds, window, { perTest: Number.MAX_SAFE_INTEGER });
        for (const t of page)
          t.executions = (all.get(t.test.id) ?? []).filter((e) => counted(e) && resultPasses(e.result, filters)).slice(0, MAX_EXECUTIONS_PER_TEST);
      }
      if (include.has('latest_fail')) {
        const fails = await this.results.executionsOf(runIds, testIds, window, {
          result: 'failed',
          // The newest counted one: with tag filters an execution may not count, so read them all.
          perTest: filtersTags(filters) ? Number.MAX_SAFE_INTEGER : 1,
          newest: true,
        });
        for (const t of page) t.latestFail = (fails.get(t.test.id) ?? []).filter(counted).at(-1) ?? null;
      }
    }
    return { items: page, total: sorted.length };
  }

  /** Puts a test of a suite the caller may edit in a quarantine state (or back to enabled). */
  async setTestState(actor: Actor, slug: string, testId: string, state: TestState): Promise<TestIdentity> {
    const suite = await this.getEditable(actor, slug);
    const test = isUuid(testId) ? await this.results.findTestIdentity(suite.id, testId.toLowerCase()) : null;
    if (!test) throw new NotFoundError('test');
    await this.results.setTestState(test.id, state, clock.now());
    return { ...test, state };
  }

  /** A suite's muted or skipped tests, most recently changed first. */
  async testsInState(actor: Actor, slug: string, state: TestState, offset: number, limit: number) {
    return this.results.listTestsInState((await this.get(actor, slug)).id, state, offset, limit);
  }

  /** A test of the suite by scope and name (blank scope: none), or 404. */
  async findTest(actor: Actor, slug: string, input: FindInput): Promise<TestIdentity> {
    const suite = await this.get(actor, slug);
    const name = input.name ?? '';
    if (!name.trim()) throw ValidationError.field('name', "can't be blank");
    const scope = input.scope === undefined || input.scope === null || input.scope === '' ? null : input.scope;
    const test = await this.results.findTestByName(suite.id, scope, name);
    if (!test) throw new NotFoundError('test');
    return test;
  }

  /** Adds or removes labels of a test of a suite the caller may edit; returns it with its labels. */
  async updateTestLabels(actor: Actor, slug: string, testId: string, input: LabelsInput): Promise<{ test: TestIdentity; labels: string[] }> {
    const errors: FieldError[] = [];
    const given = input.labels.map((l, i) => {
      const label = l.trim();
      if (!label) errors.push({ field: `labels[${i}]`, code: "can't be blank" });
      return label;
    });
    if (errors.length) throw new ValidationError(errors);
    const suite = await this.getEditable(actor, slug);
    const test = isUuid(testId) ? await this.results.findTestIdentity(suite.id, testId.toLowerCase()) : null;
    if (!test) throw new NotFoundError('test');
    let labels: string[];
    if (input.operator === 'add') {
      labels = [...test.labels];
      for (const l of given) if (!labels.includes(l)) labels.push(l);
      if (labels.length > MAX_TEST_LABELS) throw ValidationError.field('labels', `is too long: a test has at most ${MAX_TEST_LABELS} labels`);
    } else {
      labels = test.labels.filter((l) => !given.includes(l));
    }
    labels.sort();
    await this.results.setTestLabels(test.id, labels);
    const updated = { ...test, labels };
    return { test: updated, labels: labelsOf(updated, test.flaky) };
  }

  /** Replaces the mutable tags of executions of a suite the caller may edit: all or none. */
  async updateExecutionTags(actor: Actor, slug: string, input: ExecutionTagsInput): Promise<number> {
    const errors: FieldError[] = [];
    const entries = input.executions.map((e, i) => {
      const id = e.id.trim().toLowerCase();
      if (!isUuid(id)) errors.push({ field: `executions[${i}].id`, code: 'is not an execution id' });
      // Mutable tags follow the rules every tag does, but must carry the `mut.` prefix (tags.md, "Mutable tags").
      for (const f of tagFaults(e.tags, 'mutable')) errors.push({ field: tagFaultField(`executions[${i}].tags`, f), code: f.code });
      return { id, tags: e.tags, index: i };
    });
    if (errors.length) throw new ValidationError(errors.slice(0, 100));
    const suite = await this.getEditable(actor, slug);
    const { unknown } = await this.results.replaceMutableTags(suite.id, entries);
    if (unknown.length) {
      const missing = new Set(unknown);
      throw new ValidationError(
        entries
          .filter((e) => missing.has(e.id))
          .slice(0, 100)
          .map((e) => ({ field: `executions[${e.index}].id`, code: 'is not an execution of this suite' })),
      );
    }
    return new Set(entries.map((e) => e.id)).size;
  }

  /**
   * The Buildkite runs of these builds in the suites the caller may see, by build id (a build's
   * `test_engine`). Suites are `read_suites` data: a token without that scope sees no run.
   */
  async runsOfBuilds(actor: Actor, buildIds: string[]): Promise<Map<string, BuildRun[]>> {
    const out = new Map<string, BuildRun[]>();
    if (!buildIds.length || !actor.principal.token.scopes.includes('read_suites')) return out;
    for (const r of await this.results.buildRuns(actor.organization.id, buildIds, this.isRestricted(actor) ? actor.principal.user.id : undefined)) {
      const list = out.get(r.buildId);
      if (list) list.push(r);
      else out.set(r.buildId, [r]);
    }
    return out;
  }

  /** The tests of these runs' executions in the window, after the filters, with their metrics. */
  private async measure(runs: WindowRun[], window: TimeWindow, f: TestFilters, slugs: Map<string, string>): Promise<MeasuredTest[]> {
    const kept = runs.filter((r) => runPasses(r, f));
    let totals: Map<string, ExecutionTotals>;
    if (!filtersTags(f)) {
      if (!kept.length) return [];
      totals = await this.results.totalsByTest(
        kept.map((r) => r.id),
        window,
      );
    } else {
      // Executions whose own tags (their upload's and their result's) hold none of the filtered
      // keys count as their run does (its tags: only runs written before upload tags were stored
      // with executions have any), totalled in SQL; the others (their own tags over the run's) are
      // weighed one by one, in any run on the branch, those whose own value fails a filter already
      // left out in SQL.
      const keys = [...new Set((f.tags ?? []).map((t) => t.key))];
      totals = kept.length
        ? await this.results.totalsByTest(
            kept.map((r) => r.id),
            window,
            { exceptOwnTags: keys },
          )
        : new Map();
      const onBranch = new Map(runs.filter((r) => branchPasses(r, f)).map((r) => [r.id, r]));
      for (const e of await this.results.taggedExecutions([...onBranch.keys()], window, f.tags ?? [])) {
        if (executionPasses(onBranch.get(e.runId)!, e.tags, f)) addExecution(totals, e);
      }
    }
    const candidates: { id: string; metrics: TestMetrics }[] = [];
    for (const [id, t] of totals) {
      const metrics = metricsOf(t, f);
      if (metrics.executionsCount === 0 || !groupPasses(metrics, f)) continue;
      if (f.minExecutions !== undefined && metrics.executionsCount < f.minExecutions) continue;
      candidates.push({ id, metrics });
    }
    const ids = candidates.map((c) => c.id);
    const [flaky, tests] = await Promise.all([this.results.flakyTestIds(ids), this.results.testsByIds(ids)]);
    const out: MeasuredTest[] = [];
    for (const c of candidates) {
      const test: SuiteTest | undefined = tests.get(c.id);
      if (!test) continue; // deleted with its suite meanwhile
      const labels = labelsOf(test, flaky.has(c.id));
      if (!testPasses(labels, test.state, f)) continue;
      out.push({ test, suiteSlug: slugs.get(test.suiteId) ?? '', labels, metrics: c.metrics });
    }
    return out;
  }

  async flakyTests(actor: Actor, slug: string, filter: { search?: string; branch?: string; period?: FlakyPeriod }, offset: number, limit: number) {
    const suite = await this.get(actor, slug);
    const since = new Date(clock.nowMs() - PERIOD_MS[filter.period ?? '7days']);
    return this.results.listFlaky({ suiteId: suite.id, since, branch: filter.branch, search: filter.search?.trim() || undefined }, offset, limit);
  }

  /** `team_ids` (or `teams_ids`): required in a Teams-enabled organization unless an admin; each a team of the user's. */
  private async teamsFor(actor: Actor, input: CreateInput, errors: FieldError[]): Promise<string[]> {
    const field = input.team_ids !== undefined ? 'team_ids' : 'teams_ids';
    const requested = input.team_ids ?? input.teams_ids ?? [];
    const isAdmin = actor.role === 'admin';
    if (actor.organization.teamsEnabled && !isAdmin && requested.length === 0) {
      errors.push({ field: 'team_ids', code: "can't be blank: this organization uses teams, so name at least one team of yours" });
      return [];
    }
    const checks = await this.organizations.checkTeams(actor, requested);
    const ids = new Set<string>();
    for (const [i, check] of checks.entries()) {
      if ('code' in check) errors.push({ field: `${field}[${i}]`, code: check.code });
      else ids.add(check.team.id);
    }
    return [...ids];
  }
}

const suiteSubject = (s: { id: string; name: string }) => ({ type: 'Suite', id: s.id, name: s.name });

/** A suite's fields as the API names them, for the audit log (never its upload token). */
const suiteData = (f: Partial<SuiteFields>): Record<string, unknown> => ({
  name: f.name,
  default_branch: f.defaultBranch,
  application_name: f.applicationName,
  color: f.color,
  emoji: f.emoji,
  oidc_policy: f.oidcPolicy,
});
