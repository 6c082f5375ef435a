/**
 * Runs a build's state machine (the rules: src/builds/jobs/state.ts) and stores what it decided, on
 * repositories bound to the transaction that locked the build's row (./service.ts opens it), so
 * job events of one build are applied one after another and each sees the others' results. In
 * the same transaction, trigger jobs that became runnable are launched (creating builds, which
 * run their own state machines) and the machine runs again; and a triggered build that ended
 * ends the synchronous trigger job that waits on it, running the parent build's machine too
 * (child, then parent: rows are always locked in that order).
 */
import type { Job } from '../jobs/model';
import type { BuildState } from '../model';
import type { ProgressingBuild } from '../repository';
import { advance } from '../jobs/state';
import { concurrencyOf } from '../jobs/concurrency';
import { buildTransition, ENDED_BUILD_STATES, machineBuildEvent } from '../states';
import { triggerJobStateFor, triggerSoftFails, type TriggeringBuild } from '../jobs/triggers';
import type { Announcements } from './announce';
import type { ProgressRepositories, StepSigner } from './repositories';
import { launchTriggeredBuild } from './triggers';
import { supersede, type Superseded } from './cancellation';
import { cancelsRunningBuildsOf } from './creation';

/**
 * One run of the machine: the bound repositories, when it runs, the signer of the steps of the
 * builds triggers create, and where it notes the builds and jobs it changed (published after commit).
 */
export interface MachineRun {
  r: ProgressRepositories;
  now: Date;
  sign: StepSigner;
  announce: Announcements;
}

/** The machine on a build whose row this transaction has locked. */
export async function advanceLocked(run: MachineRun, buildId: string): Promise<void> {
  const { r, now } = run;
  for (let stale = 0; ;) {
    const b = await r.builds.progressOf(buildId);
    run.announce.build(buildId, { organizationId: b.organizationId, pipelineId: b.pipelineId });
    const jobs = await r.jobs.currentOf(buildId);
    const build = { state: b.state, blocked: b.blocked, startedAt: b.startedAt, failingAt: b.failingAt, finishedAt: b.finishedAt };
    const next = advance(build, jobs, now);
    let moved = true;
    for (const m of next.jobs) {
      // A job an agent or a concurrency group moved since it was read (cancel_on_build_failing
      // moves jobs out of states those move too, without the build's lock) is not moved.
      if (!(await r.jobs.apply(m))) {
        moved = false;
        continue;
      }
      run.announce.job(buildId, m.id);
      // A job assigned to an agent that had not accepted it was canceled (cancel_on_build_failing): the agent holds it no more.
      const agentId = m.from === 'assigned' ? jobs.find((j) => j.id === m.id)?.agentId : null;
      if (agentId) await r.agents.dropJobIfHeld(agentId, m.id);
    }
    // The machine decides again from what the jobs are now (each retry follows a move of someone
    // else's); still stale after a few, it saves nothing rather than a build state it did not reach.
    if (!moved) {
      if (++stale < 5) continue;
      return;
    }
    // The groups of the build's jobs admit what they can: the event that ran the machine may have
    // freed a slot (a job of the group ended, outside the machine) or queued a job.
    for (const j of jobs) {
      const concurrency = concurrencyOf(j.step);
      if (concurrency) run.announce.concurrencyGroup(b.organizationId, concurrency.group);
    }
    // A new state is its event's row of the transition table; the same state, its other fields only.
    if (next.build)
      await r.builds.saveProgress(
        buildId,
        next.build,
        next.build.state === build.state ? [build.state] : buildTransition(machineBuildEvent(next.build.state)).from,
      );
    // Its first start: Cancel Intermediate Builds ends the older builds of the branch running by then.
    if (build.startedAt === null && next.build?.startedAt) await cancelIntermediateAtStart(run, buildId, b);
    const states = new Map(next.jobs.map((m) => [m.id, m.to]));
    const runnable = jobs.filter((j) => j.type === 'trigger' && (states.get(j.id) ?? j.state) === 'scheduled');
    if (runnable.length) {
      // The slug as it is now, only read when a trigger runs: the triggered build keeps it (`triggered_from`).
      const pipeline = await r.pipelines.findById(b.pipelineId);
      const parent: TriggeringBuild = {
        id: buildId,
        number: b.number,
        pipelineSlug: pipeline!.slug,
        pipelineId: b.pipelineId,
        clusterId: pipeline!.clusterId,
        branch: b.branch,
        commit: b.commit,
        source: b.source,
        organizationId: b.organizationId,
        message: b.message,
        creatorId: b.creatorId,
        unblocker: lastUnblocker(jobs),
        triggerDepth: b.triggerDepth,
      };
      for (const job of runnable) await launchTrigger(run, job, parent);
      continue; // the trigger jobs moved: the machine runs again
    }
    const state = next.build?.state ?? build.state;
    const blocked = next.build?.blocked ?? build.blocked;
    // A blocked build has not ended, whatever state its blocked_state shows (the docs: a trigger
    // step waiting on a build blocked with `failed` stays running until the step is unblocked).
    if (b.triggeredFromJobId && ENDED_BUILD_STATES.includes(state) && !blocked) {
      await finishTrigger(run, b.triggeredFromJobId, state);
    }
    return;
  }
}

/** Starts a trigger job: it runs (async: passes) with the build it created, or fails with the reason as its log. */
async function launchTrigger(run: MachineRun, job: Job, parent: TriggeringBuild): Promise<void> {
  const { r, now } = run;
  if (!(await r.jobs.startTrigger(job.id, now))) return;
  run.announce.job(job.buildId, job.id);
  const outcome = await launchTriggeredBuild(r, run.sign, job, parent);
  if ('failure' in outcome) {
    await r.jobs.failTrigger(job.id, now, triggerSoftFails(job.step));
    await r.logs.writeLine(job.id, outcome.failure, now);
    return;
  }
  const async = job.step.type === 'trigger' && job.step.trigger_async;
  await r.jobs.recordTriggeredBuild(job.id, outcome.build, async ? now : null);
  run.announce.job(job.buildId, job.id);
  // The trigger steps whose builds the new one superseded ended skipped: their builds go on (this
  // one's machine runs again after its triggers anyway).
  await advanceSkippedTriggers(run, job.buildId, outcome.skippedTriggers);
  // The new build's own machine: its trigger steps run, and if it is over at once (nothing to
  // run) it ends this job already.
  await advanceLocked(run, outcome.build.id);
}

/** The builds of trigger jobs a supersession skipped go on, but `running` (the build whose machine is running, which goes on by itself). */
async function advanceSkippedTriggers(run: MachineRun, running: string, triggers: Superseded['triggers']): Promise<void> {
  for (const t of triggers) {
    run.announce.job(t.buildId, t.jobId);
    if (t.buildId !== running && (await run.r.builds.lock(t.buildId))) await advanceLocked(run, t.buildId);
  }
}

/**
 * A build just started: with Cancel Intermediate Builds on for its branch, the older builds of
 * the branch running now are canceled, as when it was created. The canceling page: an earlier
 * build that started running again (a retried job) before the new build starts is canceled; one
 * that starts again after it is not (only a build's first start supersedes).
 */
async function cancelIntermediateAtStart(run: MachineRun, buildId: string, b: ProgressingBuild): Promise<void> {
  const pipeline = await run.r.pipelines.findById(b.pipelineId);
  if (!pipeline || !cancelsRunningBuildsOf(pipeline, b.branch)) return;
  const { ended, triggers } = await supersede(run.r, b.pipelineId, b.branch, b.number, 'supersede', run.now);
  for (const id of ended) run.announce.build(id, { organizationId: b.organizationId, pipelineId: b.pipelineId });
  await advanceSkippedTriggers(run, buildId, triggers);
}

/** A triggered build ended: the synchronous trigger job waiting on it takes its result, and its build goes on. */
async function finishTrigger(run: MachineRun, jobId: string, buildState: BuildState): Promise<void> {
  const { r, now } = run;
  const trigger = await r.jobs.runningTrigger(jobId);
  if (!trigger) return; // async, already ended, or retried away
  const { buildId, step } = trigger;
  await r.jobs.endTrigger(jobId, triggerJobStateFor(buildState) === 'passed' ? 'trigger_passed' : 'trigger_failed', now, triggerSoftFails(step));
  run.announce.job(buildId, jobId);
  if (await r.builds.lock(buildId)) await advanceLocked(run, buildId);
}

/** The user who unblocked the build's most recently unblocked step, if any. */
function lastUnblocker(jobs: readonly Job[]): Job['unblockedBy'] {
  let last: { by: Job['unblockedBy']; at: Date } | null = null;
  for (const j of jobs) if (j.unblockedBy && j.unblockedAt && (!last || j.unblockedAt > last.at)) last = { by: j.unblockedBy, at: j.unblockedAt };
  return last?.by ?? null;
}
