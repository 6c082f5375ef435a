/**
 * Issue 7, item 7: a stateful model test. fast-check runs random sequences of pipeline commands
 * (create, update, archive, unarchive, delete) and build commands (create, cancel, rebuild)
 * against the API and against a small in-memory model of what they mean. Each command's answer
 * must be the one the model predicts (status and the fields it decides), and after every
 * command the API's lists must agree with the model: which pipelines exist, their names,
 * descriptions, archive state and build counts, and every build's number, state and origin.
 * Commands name pipelines from a small set of names, so they often meet a missing, archived or
 * already-taken one. The seed is fixed (MODEL_SEED overrides it) and printed on failure.
 */
import fc from 'fast-check';
import request from 'supertest';
import type { Express } from 'express';
import { slugify } from '../../src/pipelines/slug';
import { auth, describeEachDatabase } from '../support/context';

const SEED = Number(process.env.MODEL_SEED ?? 7_2026);
const RUNS = Number(process.env.MODEL_RUNS ?? 40);
const MAX_COMMANDS = 25;
const NAMES = ['Alpha', 'Beta', 'Gamma Ray', 'Delta'];
const SHA = 'abcd0b72a1e580e90712cdd9eb26d3fb41cd09c8';

interface ModelBuild {
  state: 'scheduled' | 'canceled';
  branch: string;
  rebuiltFrom: number | null;
}
interface ModelPipeline {
  name: string;
  description: string | null;
  archived: boolean;
  allowRebuilds: boolean;
  /** The counter survives nothing: a pipeline created again under the same slug starts at 1. */
  next: number;
  builds: Map<number, ModelBuild>;
}
interface Model {
  /** By slug. */
  pipelines: Map<string, ModelPipeline>;
}
interface Real {
  app: Express;
  org: string;
  token: string;
}

const api = (r: Real) => request(r.app);
const base = (r: Real) => `/v2/organizations/${r.org}/pipelines`;

function fail(what: string, res: request.Response, expected: number): never {
  throw new Error(`${what}: expected ${expected}, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}
/** Statuses the commands met, for the summary: refusals (404, 422) are as much part of the model as successes. */
const statusCounts = new Map<number, number>();
function expectStatus(what: string, res: request.Response, expected: number) {
  if (res.status !== expected) fail(what, res, expected);
  statusCounts.set(res.status, (statusCounts.get(res.status) ?? 0) + 1);
}

/**
 * Which pipeline (or build) a command is about: mostly one the model has (by position, so the
 * choice is made when the command runs), sometimes one by name that may not exist.
 */
type Target = { existing: number } | { slug: string };
type BuildTarget = { existing: number } | { number: number };

function slugOf(m: Model, t: Target): string {
  if ('slug' in t) return t.slug;
  const slugs = [...m.pipelines.keys()];
  return slugs.length ? slugs[t.existing % slugs.length]! : slugify(NAMES[0]!);
}
function numberOf(m: Model, slug: string, t: BuildTarget): number {
  if ('number' in t) return t.number;
  const numbers = [...(m.pipelines.get(slug)?.builds.keys() ?? [])];
  return numbers.length ? numbers[t.existing % numbers.length]! : 1;
}

/** A command about an existing pipeline (or build) runs only when the model has one. */
function applicable(m: Readonly<Model>, t: Target, b?: BuildTarget): boolean {
  if ('existing' in t && m.pipelines.size === 0) return false;
  if (!b || !('existing' in b)) return true;
  const slug = slugOf(m as Model, t);
  return (m.pipelines.get(slug)?.builds.size ?? 0) > 0;
}

function nameTaken(m: Model, name: string, exceptSlug?: string): boolean {
  return [...m.pipelines].some(([slug, p]) => slug !== exceptSlug && p.name === name);
}

class CreatePipeline implements fc.AsyncCommand<Model, Real> {
  constructor(readonly name: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const slug = slugify(this.name);
    const res = await api(r)
      .post(base(r))
      .set(auth(r.token))
      .send({ name: this.name, repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n' });
    if (nameTaken(m, this.name) || m.pipelines.has(slug)) return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 201);
    expect(res.body).toMatchObject({ slug, name: this.name, archived_at: null, scheduled_builds_count: 0 });
    m.pipelines.set(slug, { name: this.name, description: null, archived: false, allowRebuilds: true, next: 1, builds: new Map() });
  }
  toString = () => `createPipeline(${this.name})`;
}

class UpdatePipeline implements fc.AsyncCommand<Model, Real> {
  slug = '?';
  constructor(
    readonly target: Target,
    readonly changes: { name?: string; description?: string; allow_rebuilds?: boolean },
  ) {}
  check = (m: Readonly<Model>) => applicable(m, this.target);
  async run(m: Model, r: Real) {
    this.slug = slugOf(m, this.target);
    const res = await api(r)
      .patch(`${base(r)}/${this.slug}`)
      .set(auth(r.token))
      .send(this.changes);
    const p = m.pipelines.get(this.slug);
    if (!p) return expectStatus(this.toString(), res, 404);
    if (p.archived) return expectStatus(this.toString(), res, 422);
    // A new name renames the slug, as the real API documents: one another pipeline has is refused.
    const renamed = this.changes.name !== undefined && this.changes.name !== p.name;
    const slug = renamed ? slugify(this.changes.name!) : this.slug;
    if (this.changes.name !== undefined && nameTaken(m, this.changes.name, this.slug)) return expectStatus(this.toString(), res, 422);
    if (slug !== this.slug && m.pipelines.has(slug)) return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 200);
    if (this.changes.name !== undefined) p.name = this.changes.name;
    if (this.changes.description !== undefined) p.description = this.changes.description;
    if (this.changes.allow_rebuilds !== undefined) p.allowRebuilds = this.changes.allow_rebuilds;
    if (slug !== this.slug) {
      m.pipelines.delete(this.slug);
      m.pipelines.set(slug, p);
    }
    expect(res.body).toMatchObject({ slug, name: p.name, description: p.description, allow_rebuilds: p.allowRebuilds });
  }
  toString = () => `updatePipeline(${this.slug}, ${JSON.stringify(this.changes)})`;
}

class ArchivePipeline implements fc.AsyncCommand<Model, Real> {
  slug = '?';
  constructor(
    readonly target: Target,
    readonly archive: boolean,
  ) {}
  check = (m: Readonly<Model>) => applicable(m, this.target);
  async run(m: Model, r: Real) {
    this.slug = slugOf(m, this.target);
    const res = await api(r)
      .post(`${base(r)}/${this.slug}/${this.archive ? 'archive' : 'unarchive'}`)
      .set(auth(r.token));
    const p = m.pipelines.get(this.slug);
    if (!p) return expectStatus(this.toString(), res, 404);
    if (p.archived === this.archive) return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 200);
    p.archived = this.archive;
    expect(res.body.archived_at === null).toBe(!this.archive);
  }
  toString = () => `${this.archive ? 'archive' : 'unarchive'}Pipeline(${this.slug})`;
}

class DeletePipeline implements fc.AsyncCommand<Model, Real> {
  slug = '?';
  constructor(readonly target: Target) {}
  check = (m: Readonly<Model>) => applicable(m, this.target);
  async run(m: Model, r: Real) {
    this.slug = slugOf(m, this.target);
    const res = await api(r)
      .delete(`${base(r)}/${this.slug}`)
      .set(auth(r.token));
    if (!m.pipelines.has(this.slug)) return expectStatus(this.toString(), res, 404);
    expectStatus(this.toString(), res, 204);
    m.pipelines.delete(this.slug);
  }
  toString = () => `deletePipeline(${this.slug})`;
}

class CreateBuild implements fc.AsyncCommand<Model, Real> {
  slug = '?';
  constructor(
    readonly target: Target,
    readonly branch: string,
  ) {}
  check = (m: Readonly<Model>) => applicable(m, this.target);
  async run(m: Model, r: Real) {
    this.slug = slugOf(m, this.target);
    const res = await api(r)
      .post(`${base(r)}/${this.slug}/builds`)
      .set(auth(r.token))
      .send({ commit: SHA, branch: this.branch, message: 'model' });
    const p = m.pipelines.get(this.slug);
    if (!p) return expectStatus(this.toString(), res, 404);
    if (p.archived) return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 201);
    const number = p.next++;
    p.builds.set(number, { state: 'scheduled', branch: this.branch, rebuiltFrom: null });
    expect(res.body).toMatchObject({ number, state: 'scheduled', branch: this.branch, rebuilt_from: null });
  }
  toString = () => `createBuild(${this.slug}, ${this.branch})`;
}

/** A PUT to one build (its `cancel` or `rebuild`): the build the target and the build choice name in the model. */
abstract class BuildAction implements fc.AsyncCommand<Model, Real> {
  abstract readonly action: 'cancel' | 'rebuild';
  slug = '?';
  number = 0;
  constructor(
    readonly target: Target,
    readonly build: BuildTarget,
  ) {}
  check = (m: Readonly<Model>) => applicable(m, this.target, this.build);
  abstract run(m: Model, r: Real): Promise<void>;
  /** Names the build in the model and sends the action to it. */
  protected async put(m: Model, r: Real) {
    this.slug = slugOf(m, this.target);
    this.number = numberOf(m, this.slug, this.build);
    return api(r)
      .put(`${base(r)}/${this.slug}/builds/${this.number}/${this.action}`)
      .set(auth(r.token));
  }
  toString = () => `${this.action}Build(${this.slug}, ${this.number})`;
}

class CancelBuild extends BuildAction {
  readonly action = 'cancel';
  async run(m: Model, r: Real) {
    const res = await this.put(m, r);
    const b = m.pipelines.get(this.slug)?.builds.get(this.number);
    if (!b) return expectStatus(this.toString(), res, 404);
    if (b.state !== 'scheduled') return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 200);
    b.state = 'canceled';
    expect(res.body).toMatchObject({ number: this.number, state: 'canceled' });
  }
}

class RebuildBuild extends BuildAction {
  readonly action = 'rebuild';
  async run(m: Model, r: Real) {
    const res = await this.put(m, r);
    const p = m.pipelines.get(this.slug);
    const b = p?.builds.get(this.number);
    if (!p || !b) return expectStatus(this.toString(), res, 404);
    if (p.archived || !p.allowRebuilds) return expectStatus(this.toString(), res, 422);
    expectStatus(this.toString(), res, 200);
    const number = p.next++;
    p.builds.set(number, { state: 'scheduled', branch: b.branch, rebuiltFrom: this.number });
    expect(res.body).toMatchObject({ number, state: 'scheduled', branch: b.branch, rebuilt_from: { number: this.number } });
  }
}

/** After every command: the API's lists say what the model says. */
async function expectAgreement(m: Model, r: Real) {
  const list = await api(r)
    .get(`${base(r)}?per_page=100`)
    .set(auth(r.token))
    .expect(200);
  const seen = Object.fromEntries(
    (list.body as Record<string, unknown>[]).map((p) => [
      p.slug,
      { name: p.name, description: p.description, archived: p.archived_at !== null, allowRebuilds: p.allow_rebuilds, scheduled: p.scheduled_builds_count },
    ]),
  );
  const expected = Object.fromEntries(
    [...m.pipelines].map(([slug, p]) => [
      slug,
      {
        name: p.name,
        description: p.description,
        archived: p.archived,
        allowRebuilds: p.allowRebuilds,
        scheduled: [...p.builds.values()].filter((b) => b.state === 'scheduled').length,
      },
    ]),
  );
  expect(seen).toEqual(expected);

  let total = 0;
  for (const [slug, p] of m.pipelines) {
    const builds = await api(r)
      .get(`${base(r)}/${slug}/builds?per_page=100`)
      .set(auth(r.token))
      .expect(200);
    const got = (builds.body as { number: number; state: string; branch: string; rebuilt_from: { number: number } | null }[]).map((b) => ({
      number: b.number,
      state: b.state,
      branch: b.branch,
      rebuiltFrom: b.rebuilt_from?.number ?? null,
    }));
    const want = [...p.builds].map(([number, b]) => ({ number, ...b })).sort((a, b) => b.number - a.number);
    expect(got).toEqual(want);
    total += want.length;
  }
  const all = await api(r).get(`/v2/organizations/${r.org}/builds?per_page=100`).set(auth(r.token)).expect(200);
  expect(all.body).toHaveLength(total);
}

const targetArb: fc.Arbitrary<Target> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(20).map((existing) => ({ existing })) },
  { weight: 1, arbitrary: fc.constantFrom(...NAMES.map(slugify)).map((slug) => ({ slug })) },
);
const buildArb: fc.Arbitrary<BuildTarget> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(20).map((existing) => ({ existing })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 8 }).map((number) => ({ number })) },
);
const commands = [
  fc.constantFrom(...NAMES).map((n) => new CreatePipeline(n)),
  fc
    .tuple(
      targetArb,
      fc.record({ name: fc.constantFrom(...NAMES, 'Epsilon'), description: fc.constantFrom('one', 'two'), allow_rebuilds: fc.boolean() }, { requiredKeys: [] }),
    )
    .map(([t, c]) => new UpdatePipeline(t, c)),
  fc.tuple(targetArb, fc.boolean()).map(([t, a]) => new ArchivePipeline(t, a)),
  targetArb.map((t) => new DeletePipeline(t)),
  fc.tuple(targetArb, fc.constantFrom('main', 'feature/x')).map(([t, b]) => new CreateBuild(t, b)),
  fc.tuple(targetArb, buildArb).map(([t, b]) => new CancelBuild(t, b)),
  fc.tuple(targetArb, buildArb).map(([t, b]) => new RebuildBuild(t, b)),
];
// Creates are weighted up so that sequences have pipelines and builds to work on.
const weighted = [commands[0]!, commands[0]!, commands[4]!, commands[4]!, ...commands];

describeEachDatabase('stateful model of pipelines and builds', (ctx) => {
  let stepsRun = 0;

  afterAll(() => {
    const statuses = [...statusCounts]
      .sort(([a], [b]) => a - b)
      .map(([st, n]) => `${st}: ${n}`)
      .join(', ');
    process.stdout.write(
      `\nmodel test [${ctx()?.kind}]: ${RUNS} runs, ${stepsRun} commands, each followed by a full comparison (seed ${SEED}); statuses ${statuses}\n`,
    );
    statusCounts.clear();
  });

  it('every answer and every list agrees with the model after every command', async () => {
    const property = fc.asyncProperty(fc.commands(weighted, { maxCommands: MAX_COMMANDS, size: 'max' }), async (cmds) => {
      // A fresh organization per run: runs do not see each other.
      const { org, token } = await ctx().givenAdmin();
      const real: Real = { app: ctx().app, org: org.slug, token };
      const model: Model = { pipelines: new Map() };
      const checked = [...cmds].map((cmd) => ({
        check: (mm: Readonly<Model>) => cmd.check(mm),
        run: async (mm: Model, rr: Real) => {
          await cmd.run(mm, rr);
          stepsRun += 1;
          await expectAgreement(mm, rr);
        },
        toString: () => cmd.toString(),
      }));
      await fc.asyncModelRun(() => ({ model, real }), checked);
    });
    try {
      await fc.assert(property, { seed: SEED, numRuns: RUNS });
    } catch (err) {
      throw new Error(
        `model test [${ctx().kind}] failed with seed ${SEED} (MODEL_SEED=${SEED} to replay):\n${(err as Error).message}\n${String((err as Error).cause ?? '')}`,
      );
    }
  }, 120_000);
});
