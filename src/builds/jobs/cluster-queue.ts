/**
 * Which cluster queue a new job targets: the queue its `queue=KEY` rule names, or without one
 * the cluster's default queue, as the real service does. A job whose queue the cluster does not
 * have (yet) records none; dispatch matches agents by their tags either way
 * (src/builds/jobs/agent-work.ts). Pure.
 */
import type { PlannedJob } from './plan';

/** A cluster's queues as a new job looks them up. */
export interface ClusterQueues {
  clusterId: string;
  defaultQueueId: string | null;
  byKey: Map<string, string>;
}

/** The `queue` a job's rules name, if any (the first `queue=` rule). */
export function queueRuleOf(rules: string[]): string | null {
  const rule = rules.find((r) => r.startsWith('queue='));
  return rule === undefined ? null : rule.slice('queue='.length);
}

/** The jobs with their cluster and queue; unchanged when the pipeline is in no cluster. */
export function placeInCluster<J extends PlannedJob>(jobs: J[], queues: ClusterQueues | null): J[] {
  if (!queues) return jobs;
  return jobs.map((j) => {
    const key = queueRuleOf(j.agentQueryRules);
    const queueId = key === null ? queues.defaultQueueId : (queues.byKey.get(key) ?? null);
    return { ...j, clusterId: queues.clusterId, clusterQueueId: j.type === 'script' ? queueId : null };
  });
}
