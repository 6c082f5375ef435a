/**
 * The transactional outbox of notifications (webhooks, Slack, OpenTelemetry, commit statuses).
 *
 * `outbox_events` is written by triggers on builds, jobs and agents, so every state change that
 * can be told to the world is recorded in the transaction that made it, whatever code path made
 * it (API, agent, sweeper, scheduler, webhook delivery, CLI): a rolled-back change records
 * nothing, a committed one can't be lost. A trigger records the transition only (what moved,
 * from which state to which); which webhook event that is, and who hears of it, is decided in
 * src/notifications/ when the event is fanned out (`fanned_out_at`). `seq` orders events: the
 * deliveries of one build to one target go out in that order.
 *
 * `notification_deliveries` is one event for one target (a notification service, a pipeline's
 * `notify` entry, a commit status): its rendered payload, its state (pending, delivered, failed
 * = gave up), its attempts and back-off, and a lease (`lease_until`) that lets several server
 * processes share the work: a delivery is attempted by whoever leased it, and a lease that
 * outlives its process (SIGKILL) expires and the delivery is attempted again (at least once).
 * `notification_attempts` keeps every attempt: when, how long, the status, an excerpt.
 */
import type { Knex } from 'knex';

/** Job states whose arrival is an event (job.scheduled, job.started, job.finished, job.activated). */
const JOB_STATES = ['scheduled', 'running', 'passed', 'failed', 'canceled', 'timed_out', 'expired', 'unblocked'];
const AGENT_STATES = ['connected', 'lost', 'disconnected', 'stopping', 'stopped'];
const list = (states: string[]) => states.map((s) => `'${s}'`).join(', ');

/** Whether the migration runs on Postgres (Knex types `knex.client` loosely; it is a Client). */
function isPostgres(knex: Knex): boolean {
  const client: Knex.Client = knex.client;
  return client.dialect === 'postgresql';
}

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
  await knex.schema.createTable('outbox_events', (t) => {
    t.bigIncrements('seq').primary();
    t.string('kind', 10).notNullable(); // build | job | agent
    t.uuid('subject_id').notNullable();
    t.string('subject_type', 20); // a job's type
    t.uuid('organization_id').notNullable();
    t.uuid('pipeline_id');
    t.uuid('build_id');
    t.string('from_state', 20);
    t.string('to_state', 20).notNullable();
    t.boolean('blocked');
    ts(t, 'occurred_at').notNullable();
    ts(t, 'fanned_out_at');
    t.index(['fanned_out_at', 'seq']);
  });

  await knex.schema.createTable('notification_deliveries', (t) => {
    t.uuid('id').primary();
    t.bigInteger('event_seq').notNullable();
    t.string('event', 40).notNullable();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    // The target: a notification service (its settings are read when sending), or a target
    // described in full (a pipeline's notify entry, a commit status).
    t.string('target_kind', 20).notNullable();
    t.uuid('service_id');
    t.text('target'); // JSON, never a secret
    // Deliveries with the same (target_key, order_key) go out in event order.
    t.string('target_key', 200).notNullable();
    t.string('order_key', 100).notNullable();
    t.text('payload').notNullable(); // JSON
    t.string('state', 20).notNullable(); // pending | delivered | failed
    t.integer('attempts').notNullable().defaultTo(0);
    ts(t, 'next_attempt_at').notNullable();
    ts(t, 'lease_until');
    t.string('lease_owner', 64);
    t.integer('last_status');
    t.uuid('redelivery_of');
    ts(t, 'created_at').notNullable();
    ts(t, 'finished_at');
    t.index(['state', 'next_attempt_at']);
    t.index(['target_key', 'order_key', 'state', 'event_seq']);
    t.index(['service_id', 'created_at']);
    t.index(['created_at']);
  });

  await knex.schema.createTable('notification_attempts', (t) => {
    t.uuid('delivery_id').notNullable().references('notification_deliveries.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    ts(t, 'started_at').notNullable();
    t.integer('duration_ms').notNullable();
    t.integer('status');
    t.boolean('ok').notNullable();
    t.text('excerpt').notNullable();
    t.primary(['delivery_id', 'number']);
  });

  if (isPostgres(knex)) await postgresTriggers(knex);
  else await sqliteTriggers(knex);
}

async function postgresTriggers(knex: Knex): Promise<void> {
  await knex.raw(`
    create function windsock_outbox_build() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' or old.state is distinct from new.state or old.blocked is distinct from new.blocked then
        insert into outbox_events (kind, subject_id, organization_id, pipeline_id, build_id, from_state, to_state, blocked, occurred_at)
        values ('build', new.id, new.organization_id, new.pipeline_id, new.id,
                case when tg_op = 'INSERT' then null else old.state end, new.state, new.blocked, clock_timestamp());
      end if;
      return new;
    end $$`);
  // BEFORE, not AFTER: a build is created in one statement with its jobs (a data-modifying
  // CTE, src/builds/repository.ts), whose AFTER triggers all fire at the statement's end in an
  // order of Postgres's choosing; a BEFORE trigger records the build as its row is written, so
  // build.scheduled comes before its jobs' job.scheduled. A statement that then fails takes the
  // record with it, as it would an AFTER trigger's.
  await knex.raw(`create trigger outbox_builds before insert or update of state, blocked on builds
    for each row execute function windsock_outbox_build()`);
  await knex.raw(`
    create function windsock_outbox_job() returns trigger language plpgsql as $$
    begin
      if new.state in (${list(JOB_STATES)}) and (tg_op = 'INSERT' or old.state is distinct from new.state) then
        insert into outbox_events (kind, subject_id, subject_type, organization_id, pipeline_id, build_id, from_state, to_state, occurred_at)
        select 'job', new.id, new.type, b.organization_id, new.pipeline_id, new.build_id,
               case when tg_op = 'INSERT' then null else old.state end, new.state, clock_timestamp()
        from builds b where b.id = new.build_id;
      end if;
      return null;
    end $$`);
  await knex.raw(`create trigger outbox_jobs after insert or update of state on jobs
    for each row execute function windsock_outbox_job()`);
  await knex.raw(`
    create function windsock_outbox_agent() returns trigger language plpgsql as $$
    begin
      if new.connection_state in (${list(AGENT_STATES)}) and old.connection_state is distinct from new.connection_state then
        insert into outbox_events (kind, subject_id, organization_id, from_state, to_state, occurred_at)
        values ('agent', new.id, new.organization_id, old.connection_state, new.connection_state, clock_timestamp());
      end if;
      return null;
    end $$`);
  await knex.raw(`create trigger outbox_agents after update of connection_state on agents
    for each row execute function windsock_outbox_agent()`);
}

const SQLITE_TRIGGERS = ['outbox_builds_insert', 'outbox_builds_update', 'outbox_jobs_insert', 'outbox_jobs_update', 'outbox_agents'];

/**
 * Runs `change` with the outbox's triggers set aside on SQLite. A later migration that changes
 * builds, jobs or agents in a way SQLite can only do by rebuilding the table (knex's dropColumn,
 * a changed column) must go through this: the rebuild drops the table's own triggers, and a
 * trigger on jobs that reads builds makes the rename of the rebuilt table fail. Postgres alters
 * tables in place: `change` just runs.
 */
export async function withoutOutboxTriggers(knex: Knex, change: () => Promise<void>): Promise<void> {
  if (isPostgres(knex)) return change();
  for (const t of SQLITE_TRIGGERS) await knex.raw(`drop trigger if exists ${t}`);
  await change();
  await sqliteTriggers(knex);
}

/** SQLite keeps timestamps as epoch milliseconds (see src/db/values.ts). */
const SQLITE_NOW = `cast(round((julianday('now') - 2440587.5) * 86400000) as integer)`;

async function sqliteTriggers(knex: Knex): Promise<void> {
  await knex.raw(`create trigger outbox_builds_insert after insert on builds begin
    insert into outbox_events (kind, subject_id, organization_id, pipeline_id, build_id, from_state, to_state, blocked, occurred_at)
    values ('build', new.id, new.organization_id, new.pipeline_id, new.id, null, new.state, new.blocked, ${SQLITE_NOW});
  end`);
  await knex.raw(`create trigger outbox_builds_update after update of state, blocked on builds
    when old.state is not new.state or old.blocked is not new.blocked begin
    insert into outbox_events (kind, subject_id, organization_id, pipeline_id, build_id, from_state, to_state, blocked, occurred_at)
    values ('build', new.id, new.organization_id, new.pipeline_id, new.id, old.state, new.state, new.blocked, ${SQLITE_NOW});
  end`);
  for (const [name, when, from] of [
    ['outbox_jobs_insert', `after insert on jobs when new.state in (${list(JOB_STATES)})`, 'null'],
    ['outbox_jobs_update', `after update of state on jobs when new.state in (${list(JOB_STATES)}) and old.state is not new.state`, 'old.state'],
  ]) {
    await knex.raw(`create trigger ${name} ${when} begin
      insert into outbox_events (kind, subject_id, subject_type, organization_id, pipeline_id, build_id, from_state, to_state, occurred_at)
      select 'job', new.id, new.type, b.organization_id, new.pipeline_id, new.build_id, ${from}, new.state, ${SQLITE_NOW}
      from builds b where b.id = new.build_id;
    end`);
  }
  await knex.raw(`create trigger outbox_agents after update of connection_state on agents
    when new.connection_state in (${list(AGENT_STATES)}) and old.connection_state is not new.connection_state begin
    insert into outbox_events (kind, subject_id, organization_id, from_state, to_state, occurred_at)
    values ('agent', new.id, new.organization_id, old.connection_state, new.connection_state, ${SQLITE_NOW});
  end`);
}

export async function down(knex: Knex): Promise<void> {
  if (isPostgres(knex)) {
    await knex.raw('drop trigger if exists outbox_builds on builds');
    await knex.raw('drop trigger if exists outbox_jobs on jobs');
    await knex.raw('drop trigger if exists outbox_agents on agents');
    await knex.raw('drop function if exists windsock_outbox_build()');
    await knex.raw('drop function if exists windsock_outbox_job()');
    await knex.raw('drop function if exists windsock_outbox_agent()');
  } else {
    for (const t of SQLITE_TRIGGERS) await knex.raw(`drop trigger if exists ${t}`);
  }
  await knex.schema.dropTableIfExists('notification_attempts');
  await knex.schema.dropTableIfExists('notification_deliveries');
  await knex.schema.dropTableIfExists('outbox_events');
}
