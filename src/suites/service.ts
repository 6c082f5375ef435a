/**
 * The rules of test suites: who may see or change one (Teams), how a create or update body
 * becomes stored fields (slug, teams, the upload API token), and the reads of a suite's runs,
 * tests and flaky tests. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components, operations } from '../../generated/api';
import { NotFoundError, ValidationError, type FieldError } from '../core/errors';
import type { OrganizationRepository } from '../organizations/repository';
import { slugify } from '../pipelines/slug';
import { sha256Hex } from '../security/keys';
import type { Suite, SuiteFields, SuiteRepository } from './repository';
import type { SuiteResultsRepository } from './results-repository';
import type { Actor } from '../core/identity';

type CreateInput = components['schemas']['CreateSuiteRequest'];
type UpdateInput = components['schemas']['UpdateSuiteRequest'];

export type FlakyPeriod = NonNullable<NonNullable<operations['listFlakyTests']['parameters']['query']>['period']>;

const PERIOD_MS: Record<FlakyPeriod, number> = {
  '1hour': 3_600_000,
  '4hours': 4 * 3_600_000,
  '1day': 86_400_000,
  '7days': 7 * 86_400_000,
  '14days': 14 * 86_400_000,
  '28days': 28 * 86_400_000,
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A suite API token: 24 random bytes, so a plain SHA-256 is enough to store and look it up by. */
export function newSuiteToken(): string {
  return crypto.randomBytes(24).toString('base64url');
}

export class SuiteService {
  constructor(
    private readonly suites: SuiteRepository,
    private readonly results: SuiteResultsRepository,
    private readonly orgs: OrganizationRepository,
  ) {}

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
    const teamIds = await this.teamsFor(actor, input, errors);
    if (errors.length) throw new ValidationError(errors);

    const id = crypto.randomUUID();
    const apiToken = newSuiteToken();
    await this.suites.insert(
      {
        id,
        organizationId: actor.organization.id,
        slug,
        createdById: actor.principal.user.id,
        createdAt: new Date(),
        apiTokenHash: sha256Hex(apiToken),
        name,
        defaultBranch: input.default_branch ?? 'main',
        applicationName: input.application_name ?? null,
        color: input.color ?? null,
        emoji: input.emoji ?? null,
      },
      teamIds,
    );
    return { suite: (await this.suites.findById(id))!, apiToken };
  }

  async update(actor: Actor, slug: string, input: UpdateInput): Promise<Suite> {
    const suite = await this.get(actor, slug);
    const changes: Partial<SuiteFields> = {
      defaultBranch: input.default_branch,
      applicationName: input.application_name,
      color: input.color,
      emoji: input.emoji,
    };
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) throw ValidationError.field('name', "can't be blank");
      changes.name = name;
    }
    await this.suites.update(suite.id, changes);
    return (await this.suites.findById(suite.id))!;
  }

  async delete(actor: Actor, slug: string): Promise<void> {
    await this.suites.delete((await this.get(actor, slug)).id);
  }

  async runs(actor: Actor, slug: string, offset: number, limit: number) {
    return this.results.listRuns((await this.get(actor, slug)).id, offset, limit);
  }

  async run(actor: Actor, slug: string, runId: string) {
    const suite = await this.get(actor, slug);
    const run = UUID.test(runId) ? await this.results.findRun(suite.id, runId.toLowerCase()) : null;
    if (!run) throw new NotFoundError('run');
    return run;
  }

  async failedExecutions(actor: Actor, slug: string, runId: string) {
    return this.results.failedExecutions(await this.run(actor, slug, runId), 1000);
  }

  async test(actor: Actor, slug: string, testId: string) {
    const suite = await this.get(actor, slug);
    const test = UUID.test(testId) ? await this.results.findTest(suite.id, testId.toLowerCase()) : null;
    if (!test) throw new NotFoundError('test');
    return test;
  }

  async flakyTests(actor: Actor, slug: string, filter: { search?: string; branch?: string; period?: FlakyPeriod }, offset: number, limit: number) {
    const suite = await this.get(actor, slug);
    const since = new Date(Date.now() - PERIOD_MS[filter.period ?? '7days']);
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
    const memberOf = isAdmin ? null : await this.orgs.teamIdsOf(actor.principal.user.id, actor.organization.id);
    const ids = new Set<string>();
    for (const [i, id] of requested.entries()) {
      const team = await this.orgs.findTeam(actor.organization.id, id);
      if (!team) errors.push({ field: `${field}[${i}]`, code: `is not a team of this organization (${id})` });
      else if (memberOf && !memberOf.has(team.id)) errors.push({ field: `${field}[${i}]`, code: `you are not a member of this team (${id})` });
      else ids.add(team.id);
    }
    return [...ids];
  }
}
