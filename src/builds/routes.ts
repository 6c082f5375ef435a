/** Builds: thin handlers for the three list scopes, create, get, cancel and rebuild. */
import { actorOf, principalOf } from '../http/middleware/auth';
import { operationRouter, type OperationRequest, type OperationResponse } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import type { PipelineService } from '../pipelines/service';
import type { PipelineCounts } from '../pipelines/repository';
import type { Agent } from '../agents/repository';
import { serializeAgentBase } from '../agents/serialize';
import { serializeBuild, serializeBuildPipeline } from './serialize';
import { jobInStates, withJobsOnly } from './jobs/state';
import type { BuildService, BuildWithJobs } from './service';
import type { components } from '../../generated/api';
import type { Actor } from '../core/identity';

type Schemas = components['schemas'];

/** What the answer leaves out (`exclude_jobs`, `exclude_pipeline`), and whether it adds `test_engine` (`include_test_engine`). */
type Exclude = { jobs?: boolean; pipeline?: boolean; testEngine?: boolean };
/** A build's `test_engine` (its Test Engine runs), by build id, for the builds of one organization. */
export type TestEngineRuns = (actor: Actor, buildIds: string[]) => Promise<Map<string, NonNullable<Schemas['Build']['test_engine']>>>;
/** The three list scopes share their parameters and answer. */
type ListOperation = 'listAllBuilds' | 'listOrganizationBuilds' | 'listPipelineBuilds';
/** Stands in for counts that are not read because the pipeline is left out of the answer. */
const NO_COUNTS: PipelineCounts = { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 };

/**
 * `agentsByIds` finds the agents that took jobs, which the jobs embed; `testEngineRuns` the
 * Test Engine runs a build's `test_engine` shows (`include_test_engine=true`), handed in by
 * app.ts since suites sit above builds.
 */
export function buildRoutes(
  builds: BuildService,
  pipelines: PipelineService,
  publicUrl: string,
  agentsByIds: (ids: string[]) => Promise<Agent[]> = async () => [],
  testEngineRuns: TestEngineRuns = async () => new Map(),
) {
  const api = operationRouter();

  /** `exclude` (`exclude_jobs`, `exclude_pipeline`): those keys are left out, and not read. */
  const render = async (items: BuildWithJobs[], exclude: Exclude = {}) => {
    const agentIds = exclude.jobs ? [] : items.flatMap((i) => i.jobs.flatMap((j) => (j.agentId ? [j.agentId] : [])));
    // Reads bring the pipelines' counts along; after a write they are read afresh. Only builds
    // whose jobs agents took cost the agents' read.
    const stale = exclude.pipeline ? [] : [...new Set(items.flatMap((i) => (i.pipeline.counts ? [] : [i.pipeline.id])))];
    const [counts, agents, testEngine] = await Promise.all([
      stale.length ? pipelines.counts(stale) : new Map<string, PipelineCounts>(),
      agentIds.length ? agentsByIds(agentIds) : [],
      exclude.testEngine ? testEngineOf(items) : undefined,
    ]);
    // Each pipeline is serialized once for the whole page (its builds share the object); the
    // key includes what the caller may see of it, which differs between organizations.
    const pipelineJson = new Map<string, ReturnType<typeof serializeBuildPipeline>>();
    const pipelineOf = (item: BuildWithJobs) => {
      const showsWebhook = pipelines.showsWebhookUrl(item.actor, item.perms);
      const key = `${item.pipeline.id} ${showsWebhook}`;
      let json = pipelineJson.get(key);
      if (!json) {
        json = serializeBuildPipeline(item.pipeline, {
          publicUrl,
          orgSlug: item.actor.organization.slug,
          webhookUrl: showsWebhook ? pipelines.webhookUrl(item.pipeline.id) : undefined,
          badgeUrl: pipelines.badgeUrl(item.pipeline.id),
          // Excluded pipelines were not counted: the key is dropped below, only its URLs are used.
          counts: item.pipeline.counts ?? counts.get(item.pipeline.id) ?? NO_COUNTS,
        });
        pipelineJson.set(key, json);
      }
      return json;
    };
    // The agents' JSON depends on the organization only: built once per organization of the page.
    const agentJsonByOrg = new Map<string, Map<string, ReturnType<typeof serializeAgentBase>>>();
    const agentsOf = (orgSlug: string) => {
      let json = agentJsonByOrg.get(orgSlug);
      if (!json) agentJsonByOrg.set(orgSlug, (json = new Map(agents.map((a) => [a.id, serializeAgentBase(a, publicUrl, orgSlug)]))));
      return json;
    };
    return items.map((item) => {
      const built = serializeBuild(item, {
        agents: agents.length ? agentsOf(item.actor.organization.slug) : undefined,
        publicUrl,
        orgSlug: item.actor.organization.slug,
        pipeline: pipelineOf(item),
      });
      const json = testEngine ? { ...built, test_engine: testEngine.get(item.build.id) ?? { runs: [] } } : built;
      if (!exclude.jobs && !exclude.pipeline) return json;
      const { jobs, pipeline, ...rest } = json;
      return { ...rest, ...(exclude.jobs ? {} : { jobs }), ...(exclude.pipeline ? {} : { pipeline }) };
    });
  };
  /** The builds' `test_engine`, asked once per organization of the page. */
  const testEngineOf = async (items: BuildWithJobs[]) => {
    const byOrg = new Map<string, { actor: Actor; ids: string[] }>();
    for (const i of items) {
      const entry = byOrg.get(i.actor.organization.id) ?? { actor: i.actor, ids: [] };
      entry.ids.push(i.build.id);
      byOrg.set(i.actor.organization.id, entry);
    }
    const maps = await Promise.all([...byOrg.values()].map((e) => testEngineRuns(e.actor, e.ids)));
    return new Map(maps.flatMap((m) => [...m]));
  };
  const excludeOf = (q: { exclude_jobs?: boolean; exclude_pipeline?: boolean; include_test_engine?: boolean }): Exclude => ({
    jobs: q.exclude_jobs === true,
    pipeline: q.exclude_pipeline === true,
    testEngine: q.include_test_engine === true,
  });
  const renderOne = async (item: BuildWithJobs) => (await render([item]))[0]!;

  const list = async (req: OperationRequest<ListOperation>, res: OperationResponse<ListOperation>, scope: Parameters<BuildService['list']>[0]) => {
    // Uncounted: one row past the page tells whether a next page exists without counting every match.
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => builds.list(scope, req.query, offset, limit));
    res.json(await render(items, excludeOf(req.query)));
  };

  api.on('listAllBuilds', async (req, res) => {
    await list(req, res, { principal: principalOf(res) });
  });

  api.on('listOrganizationBuilds', async (req, res) => {
    await list(req, res, { actor: actorOf(res) });
  });

  api.on('listPipelineBuilds', async (req, res) => {
    await list(req, res, { actor: actorOf(res), pipelineSlug: req.params.pipeline_slug });
  });

  api.on('createBuild', async (req, res) => {
    const actor = actorOf(res);
    const item = await builds.create(actor, req.params.pipeline_slug, req.body);
    res.status(201).json(await renderOne(item));
  });

  api.on('getBuild', async (req, res) => {
    const actor = actorOf(res);
    const includeRetried = req.query.include_retried_jobs === true;
    const exclude = excludeOf(req.query);
    const found = await builds.get(actor, req.params.pipeline_slug, req.params.build_number, includeRetried, exclude);
    const wanted = req.query.job_states;
    const states = wanted === undefined ? null : new Set([wanted].flat());
    const item = states ? withJobsOnly(found, (j) => jobInStates(j, states)) : found;
    res.json((await render([item], exclude))[0]);
  });

  api.on('cancelBuild', async (req, res) => {
    const actor = actorOf(res);
    res.json(await renderOne(await builds.cancel(actor, req.params.pipeline_slug, req.params.build_number)));
  });

  api.on('rebuildBuild', async (req, res) => {
    const actor = actorOf(res);
    res.json(await renderOne(await builds.rebuild(actor, req.params.pipeline_slug, req.params.build_number)));
  });

  api.on('retryFailedJobs', async (req, res) => {
    const actor = actorOf(res);
    const { item, retried } = await builds.retryFailed(actor, req.params.pipeline_slug, req.params.build_number, req.body?.states);
    res.status(202).json({ ...(await renderOne(item)), retried_jobs_count: retried });
  });

  return api.router;
}
