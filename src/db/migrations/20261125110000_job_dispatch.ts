/**
 * Dispatch by what an agent can run, not by the organization's oldest jobs. Each job row gets
 * its organization (`jobs.organization_id`, copied from its build) and `jobs.dispatch_key`, a
 * hash of its `agent_query_rules` (jobs with the same rules are one dispatch class). A partial
 * index over scheduled command jobs, (organization_id, dispatch_key, priority desc, created_at,
 * position), lets a poll list the organization's classes by skip scan, keep the ones the
 * agent's tags satisfy (src/agents/query-rules.ts, in code, exactly) and read each class's
 * first jobs in dispatch order: the jobs of other queues are never read.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The dispatch key as src/builds/jobs/dispatch-key.ts computed it when this migration was written
 * (SHA-256 hex of the stored rules): a migration is frozen and imports no application code, and
 * test/db/job-dispatch-migration.test.ts checks the two still agree.
 */
const dispatchKey = (agentQueryRulesJson: string) => crypto.createHash('sha256').update(agentQueryRulesJson).digest('hex');

/** The columns of jobs this migration reads and writes, as they were when it was written: frozen, not today's table map. */
interface JobsThen {
  build_id: string;
  agent_query_rules: string;
  organization_id: string | null;
  dispatch_key: string | null;
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.uuid('organization_id');
    t.string('dispatch_key', 64);
  });
  // A subquery as a bound value is written in parentheses, as Knex writes one given as the column's value.
  await knex<JobsThen>('jobs').update({
    organization_id: knex.raw('?', [knex('builds').select('organization_id').where('builds.id', knex.ref('jobs.build_id'))]),
  });
  for (const { agent_query_rules: rules } of await knex<JobsThen>('jobs').distinct('agent_query_rules')) {
    await knex<JobsThen>('jobs')
      .where({ agent_query_rules: rules })
      .update({ dispatch_key: dispatchKey(rules) });
  }
  await knex.raw(
    `create index jobs_dispatch_index on jobs (organization_id, dispatch_key, priority desc, created_at, position) where state = 'scheduled' and type = 'script'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_dispatch_index');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('organization_id');
    t.dropColumn('dispatch_key');
  });
}
