/**
 * An event's documented body, rendered from the REST representations: `{event, build,
 * pipeline, sender}`, job events add `job`, agent events carry `agent`. The representations are
 * read when the event is fanned out (normally a few milliseconds after the change committed),
 * with the state of the build or job the event is about set to the one the event recorded: a
 * quick build may have finished by then, and its build.scheduled must still say scheduled (a
 * receiver, a notify condition and a commit status read that state). A pipeline's
 * `provider.webhook_url` is a credential and is never sent out.
 */
import type { components } from '../../generated/api';
import type { Agent } from '../agents/repository';
import { serializeAgentBase } from '../agents/serialize';
import type { Build } from '../builds/model';
import type { Job } from '../builds/jobs/model';
import { serializeBuild, serializeBuildPipeline } from '../builds/serialize';
import type { Organization, User } from '../core/identity';
import type { Pipeline } from '../pipelines/repository';
import { serializePipeline, stepJson } from '../pipelines/serialize';
import type { EventName, EventPayload, Representation } from './events';
import type { Transition } from './repository';
import { stringField } from '../core/guards';

/** What rendering reads, handed in by the composition root (each an area's service). */
export interface PayloadSources {
  publicUrl: string;
  build(id: string): Promise<{ build: Build; jobs: Job[] } | null>;
  /** Jobs alone, without their build (cheap: a job event's step). */
  jobs(ids: string[]): Promise<Job[]>;
  pipelines(ids: string[]): Promise<Pipeline[]>;
  badgeUrl(pipelineId: string): string;
  agents(ids: string[]): Promise<Agent[]>;
  organization(id: string): Promise<Organization | null>;
  /** The job the agent holds, in its REST shape (the agent's `job`), or null. */
  heldJob(agent: Agent): Promise<Representation | null>;
  /** A cluster agent token, in its REST shape (a refused registration's event). */
  clusterToken(id: string, orgSlug: string): Promise<{ clusterId: string; json: Representation } | null>;
}

/** A rendered event with what the fan-out needs to know of where it happened. */
export interface RenderedEvent {
  payload: EventPayload;
  /** The organization, for providers whose body names it (OpenTelemetry's resource); not in the webhook body. */
  organization: { id: string; slug: string; name: string };
  pipeline: Pipeline | null;
  build: Build | null;
  job: Job | null;
  /** The build's jobs as read at fan-out (a step's notifications read its other jobs); [] for an agent event. */
  jobs: Job[];
  agent: Agent | null;
  /** Where an event about no pipeline or agent happened (a cluster token's): its cluster. */
  clusterId?: string | null;
}

/** The build's steps, each once (its jobs share it: parallel shards, retries), in the build's order, as the REST pipeline shows steps. */
function buildSteps(jobs: readonly Job[]): Representation[] {
  const seen = new Set<string>();
  const steps: Representation[] = [];
  for (const j of [...jobs].sort((a, b) => a.position - b.position)) {
    if (seen.has(j.stepId)) continue;
    seen.add(j.stepId);
    steps.push({ ...stepJson(j.step) });
  }
  return steps;
}

const NO_COUNTS = { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 };

const sender = (u: User | null | undefined) => (u ? { id: u.id, name: u.name } : null);

export async function renderEvent(src: PayloadSources, name: EventName, t: Transition): Promise<RenderedEvent | null> {
  const org = await src.organization(t.organizationId);
  if (!org) return null;
  const organization = { id: org.id, slug: org.slug, name: org.name };
  if (t.kind === 'token') {
    const token = await src.clusterToken(t.subjectId, org.slug);
    if (!token) return null; // deleted since
    return {
      payload: { event: name, blocked_ip: stringField(t.detail, 'blocked_ip') ?? '', cluster_token: token.json, sender: null },
      organization,
      pipeline: null,
      build: null,
      job: null,
      jobs: [],
      agent: null,
      clusterId: token.clusterId,
    };
  }
  if (t.kind === 'agent') {
    const [agent] = await src.agents([t.subjectId]);
    if (!agent) return null;
    // agent.blocked (the agent events page) adds the refused address and the agent's cluster token.
    let blocked = {};
    if (name === 'agent.blocked') {
      const tokenId = stringField(t.detail, 'cluster_token_id');
      const token = tokenId ? await src.clusterToken(tokenId, org.slug) : null;
      blocked = { blocked_ip: stringField(t.detail, 'blocked_ip') ?? '', cluster_token: token?.json ?? null };
    }
    return {
      // The REST agent, the job it holds included (the agent events page: an Agent).
      payload: { event: name, agent: { ...serializeAgentBase(agent, src.publicUrl, org.slug), job: await src.heldJob(agent) }, ...blocked, sender: null },
      organization,
      pipeline: null,
      build: null,
      job: null,
      jobs: [],
      agent,
    };
  }
  const found = t.buildId ? await src.build(t.buildId) : null;
  if (!found) return null; // deleted since
  const [pipeline] = await src.pipelines([found.build.pipelineId]);
  if (!pipeline) return null;
  const counts: NonNullable<Pipeline['counts']> = pipeline.counts ?? NO_COUNTS;
  const view = { publicUrl: src.publicUrl, orgSlug: org.slug, webhookUrl: undefined, badgeUrl: src.badgeUrl(pipeline.id), counts };
  const agentIds = found.jobs.flatMap((j) => (j.agentId ? [j.agentId] : []));
  const agents = agentIds.length ? await src.agents(agentIds) : [];
  const visible = found.jobs.filter((j) => !j.retried || j.id === t.subjectId);
  // cast: serializeBuild reads only the build and its jobs of the BuildWithJobs it takes (an event has no caller, permissions or pipeline for it).
  const build = serializeBuild({ build: found.build, jobs: visible } as Parameters<typeof serializeBuild>[0], {
    publicUrl: src.publicUrl,
    orgSlug: org.slug,
    pipeline: serializeBuildPipeline(pipeline, view),
    agents: new Map(agents.map((a) => [a.id, serializeAgentBase(a, src.publicUrl, org.slug)])),
  });
  // The docs: 'When using webhooks, the build object does not contain job data' (a job event has its `job`).
  const { pipeline: _embedded, jobs: _jobs, ...buildJson } = build;
  const pipelineJson: components['schemas']['Pipeline'] = serializePipeline(pipeline, { ...view, timestamps: 'iso' });
  const job = t.kind === 'job' ? (found.jobs.find((j) => j.id === t.subjectId) ?? null) : null;
  // A job removed since (`pipeline upload --replace` removes pending ones): its events tell nothing.
  if (t.kind === 'job' && !job) return null;
  // The build events page: build.finished's build has its steps' configuration (a trigger step's
  // `async` among it); only that event carries them, as documented (a build's steps can be many).
  const steps = name === 'build.finished' ? buildSteps(found.jobs) : undefined;
  const payload: EventPayload = {
    event: name,
    build: t.kind === 'build' ? { ...buildJson, state: t.toState, blocked: t.blocked, steps } : { ...buildJson },
    pipeline: { ...pipelineJson },
    sender: sender(name === 'job.activated' ? (job?.unblockedBy ?? found.build.creator) : found.build.creator),
  };
  if (job) {
    const jobJson: Record<string, unknown> = { ...(build.jobs ?? []).find((j) => 'id' in j && j.id === job.id), state: t.toState };
    // The job events page adds `retried_by` to `retry_source`: who retried it by hand ({name, email}), null for an automatic retry.
    if (job.retrySource) {
      const by = found.jobs.find((j) => j.id === job.retrySource!.job_id)?.retriedBy ?? null;
      jobJson.retry_source = { ...job.retrySource, retried_by: job.retrySource.retry_type === 'manual' && by ? { name: by.name, email: by.email } : null };
    }
    payload.job = jobJson;
  }
  // The documented one addition of this event's body: the reason, kept with the event only.
  if (name === 'job.promised_exit_status') payload.promised_exit_status_reason = typeof t.detail?.reason === 'string' ? t.detail.reason : null;
  return { payload, organization, pipeline, build: found.build, job, jobs: found.jobs, agent: null };
}
