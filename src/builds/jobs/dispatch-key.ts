/**
 * A job's dispatch class: the SHA-256 of its `agent_query_rules` as stored (JSON). Jobs with
 * equal rules are runnable by the same agents, so a poll decides once per class which of them
 * its agent may take. A hash rather than the rules themselves: rules can be longer than an index
 * entry may be on Postgres.
 */
import { sha256Hex } from '../../security/keys';

export function dispatchKey(agentQueryRulesJson: string, clusterId: string | null = null): string {
  // A cluster's jobs are a class of their own, so a poll keeps each cluster's jobs to its agents
  // (src/db/migrations/20261125181000_clusters.ts); the key of a job in no cluster is unchanged.
  return clusterId ? sha256Hex(`${agentQueryRulesJson}\0${clusterId}`) : sha256Hex(agentQueryRulesJson);
}
