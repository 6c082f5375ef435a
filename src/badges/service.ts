/**
 * Status badges, as buildkite.com's (docs: integrations/build_status_badges): a pipeline's badge
 * says `passing`, `failing` or `unknown`, for its last finished build, or the last one on
 * `?branch=`, or for the jobs of one step (`?step=`, by label: passing only if every matching job
 * passed). A build still running leaves the badge at the last result. No token is needed: the
 * key in the URL is derived from the server key, so only who was given the URL can read it,
 * private pipelines included. No HTTP, no SQL.
 */
import type { BadgeRepository } from './repository';
import { CONCLUDED_JOB_STATES } from '../builds/states';

export type BadgeStatus = 'passing' | 'failing' | 'unknown';

/** Finished builds and what they show: a blocked build has passed every step it ran. */
const BUILD_STATUS: Record<string, BadgeStatus> = { passed: 'passing', blocked: 'passing', failed: 'failing', canceled: 'failing' };
/** Finished jobs and what they show; a soft-failed job counts as passed, as its step does. */
const JOB_FINISHED: readonly string[] = CONCLUDED_JOB_STATES;
/** How many of a step's latest jobs are read to find its last finished build. */
const STEP_WINDOW = 500;

export interface BadgeQuery {
  branch?: string;
  step?: string;
}

export class BadgeService {
  constructor(
    private readonly badges: BadgeRepository,
    /** The key a pipeline's badge URL carries (PipelineService.badgeKey). */
    private readonly keyOf: (pipelineId: string) => string,
  ) {}

  /** The badge's status, or null when the key names no pipeline. */
  async status(key: string, query: BadgeQuery): Promise<BadgeStatus | null> {
    const pipelineId = await this.pipelineOf(key);
    if (pipelineId === null) return null;
    if (query.step !== undefined) return this.stepStatus(pipelineId, query.step, query.branch);
    const build = await this.badges.latestBuild(pipelineId, Object.keys(BUILD_STATUS), query.branch);
    return build ? BUILD_STATUS[build.state]! : 'unknown';
  }

  private async pipelineOf(key: string): Promise<string | null> {
    if (!/^[0-9a-f]{50}$/.test(key)) return null;
    const found = await this.badges.pipelineIdByKey(key);
    if (found !== null) return found;
    // Pipelines whose key is not stored yet get it now; most misses find none to fill.
    const missing = await this.badges.withoutKey(1000);
    for (const id of missing) await this.badges.setKey(id, this.keyOf(id));
    return missing.length > 0 ? this.badges.pipelineIdByKey(key) : null;
  }

  /** The newest build whose jobs of this step have all finished: passing when every one passed. */
  private async stepStatus(pipelineId: string, step: string, branch: string | undefined): Promise<BadgeStatus> {
    const jobs = await this.badges.latestStepJobs(pipelineId, step, branch, STEP_WINDOW);
    const byBuild = new Map<string, typeof jobs>();
    // A skipped job ran nothing: it says nothing about the step.
    for (const job of jobs.filter((j) => j.state !== 'skipped')) byBuild.set(job.buildId, [...(byBuild.get(job.buildId) ?? []), job]);
    for (const buildJobs of byBuild.values()) {
      if (!buildJobs.every((j) => JOB_FINISHED.includes(j.state))) continue;
      return buildJobs.every((j) => j.state === 'passed' || j.softFailed) ? 'passing' : 'failing';
    }
    return 'unknown';
  }
}
