/**
 * What one progression step changed, gathered while its transaction runs and published on the
 * change feed (src/live/changes.ts) only after it committed: a rolled-back step announces nothing,
 * and a page that hears a change reads the committed state.
 */
import type { Change, ChangeFeed } from '../../live/changes';

/** An organization's concurrency group. */
export interface ConcurrencyGroupId {
  organizationId: string;
  group: string;
}

interface Where {
  organizationId: string;
  pipelineId: string;
}

export class Announcements {
  private readonly builds = new Map<string, Where | null>();
  private readonly jobs = new Map<string, Set<string>>();
  private readonly concurrencyGroups = new Map<string, ConcurrencyGroupId>();

  /** A concurrency group a job of which moved: once committed, it admits what it has room for. */
  concurrencyGroup(organizationId: string, group: string): void {
    this.concurrencyGroups.set(`${organizationId}/${group}`, { organizationId, group });
  }

  /** The concurrency groups noted. */
  groups(): ConcurrencyGroupId[] {
    return [...this.concurrencyGroups.values()];
  }

  /** The build changed (its state, its set of jobs, or what its jobs did); `where` when known. */
  build(buildId: string, where?: Where): void {
    if (where) this.builds.set(buildId, where);
    else if (!this.builds.has(buildId)) this.builds.set(buildId, null);
  }

  /** One of the build's jobs changed. */
  job(buildId: string, jobId: string): void {
    let set = this.jobs.get(buildId);
    if (!set) {
      set = new Set();
      this.jobs.set(buildId, set);
    }
    set.add(jobId);
    this.build(buildId);
  }

  /** Publishes the changes of every build whose organization and pipeline were learnt (the machine reads them for every build it runs). */
  publish(feed: ChangeFeed): void {
    for (const [buildId, where] of this.builds) {
      if (!where) continue;
      const changes: Change[] = [...(this.jobs.get(buildId) ?? [])].map((jobId) => ({ kind: 'job', organizationId: where.organizationId, buildId, jobId }));
      changes.push({ kind: 'build', organizationId: where.organizationId, pipelineId: where.pipelineId, buildId });
      for (const c of changes) feed.publish(c);
    }
  }
}
