/**
 * The repositories build progression writes through, as one set: the service holds them on the
 * database handle and binds every one of them to the transaction it opens (`bind`), so each
 * statement of one progression step runs in that transaction. On SQLite this is also what keeps
 * a step from waiting on itself: the pool is one connection, which the transaction holds.
 */
import type { Knex } from 'knex';
import type { AgentRepository } from '../../agents/repository';
import type { ClusterRepository } from '../../clusters/repository';
import type { JobLogRepository } from '../jobs/log-repository';
import type { JobRepository } from '../jobs/repository';
import type { PipelineRepository } from '../../pipelines/repository';
import type { UserRepository } from '../../user/repository';
import type { RuleRepository } from '../../rules/repository';
import type { OrganizationRepository } from '../../organizations/repository';
import type { PlanContext } from '../jobs/plan';
import type { BuildRepository } from '../repository';

export interface ProgressRepositories {
  builds: BuildRepository;
  jobs: JobRepository;
  logs: JobLogRepository;
  agents: AgentRepository;
  /** Read only: a trigger step's target, and the triggering build's pipeline slug. */
  pipelines: PipelineRepository;
  /** Read only: the creator a triggered build inherits. */
  users: UserRepository;
  /** Read only: the queues a new job of a cluster's pipeline may target. */
  clusters: ClusterRepository;
  /** Read only: the rules that let a trigger step reach a pipeline of another cluster. */
  rules: RuleRepository;
  /** Read only: the organization's slug and a build creator's teams, which a step's `if` may read. */
  organizations: OrganizationRepository;
}

/** Each repository on `trx`. */
export function bind(r: ProgressRepositories, trx: Knex.Transaction): ProgressRepositories {
  return {
    builds: r.builds.withTransaction(trx),
    jobs: r.jobs.withTransaction(trx),
    logs: r.logs.withTransaction(trx),
    agents: r.agents.withTransaction(trx),
    pipelines: r.pipelines.withTransaction(trx),
    users: r.users.withTransaction(trx),
    clusters: r.clusters.withTransaction(trx),
    rules: r.rules.withTransaction(trx),
    organizations: r.organizations.withTransaction(trx),
  };
}

/** Signs a script step's fields (the server's step signing key; see ../jobs.ts). */
export type StepSigner = PlanContext['sign'];
