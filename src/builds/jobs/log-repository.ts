/**
 * A job's log: chunks as its agent sends them (each counted against the job's cap, in
 * `jobs.log_size`, in the transaction that stores it), pages of chunks for readers, lines the
 * server writes itself, and deletion. Queries only; withTransaction runs them on a
 * transaction a service opened.
 */
import type { Knex } from 'knex';
import type { DbBigInt } from '../../db/column-kinds';
import { parseJson } from '../../db/values';
import { countHeaderLines, unixNanos } from './log-headers';
import type { LogChunk } from './model';

export class JobLogRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): JobLogRepository {
    return new JobLogRepository(trx);
  }

  /** Removes the job's log, and with it what counted against its cap. */
  async deleteLog(jobId: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('job_log_chunks').where({ job_id: jobId }).delete();
      await trx('jobs').where({ id: jobId }).update({ log_size: 0 });
    });
  }

  /**
   * Stores a chunk; one already stored under its sequence is left as it is (a retried send).
   * Each section header that starts in it is recorded at `at`: the chunk starts a line at the
   * log's start or when the chunk before it (by sequence) ended with a newline. False, and
   * nothing stored, when the chunk would take the job's log (`jobs.log_size`) past `limitBytes`:
   * the guarded UPDATE counts it only if it fits, in the transaction that stores it.
   */
  async appendChunk(jobId: string, chunk: { sequence: number; offset: number; content: string }, at: Date, limitBytes: number): Promise<boolean> {
    let startsLine = chunk.offset === 0;
    if (!startsLine) {
      const before = await this.db('job_log_chunks')
        .where({ job_id: jobId, sequence: chunk.sequence - 1 })
        .first<{ last: string | null } | undefined>(this.db.raw('substr(content, length(content), 1) as last'));
      startsLine = before?.last === '\n';
    }
    const headers = countHeaderLines(chunk.content, startsLine);
    const size = Buffer.byteLength(chunk.content);
    return this.db
      .transaction(async (trx) => {
        const stored = await trx('job_log_chunks')
          .insert({
            job_id: jobId,
            sequence: chunk.sequence,
            offset: chunk.offset,
            size,
            content: chunk.content,
            header_times: headers ? JSON.stringify(Array<number>(headers).fill(unixNanos(at))) : null,
            created_at: at,
          })
          .onConflict(['job_id', 'sequence'])
          .ignore()
          .returning('sequence');
        if (!stored.length) return true;
        if (
          await trx('jobs')
            .where({ id: jobId })
            .where('log_size', '<=', limitBytes - size)
            .increment('log_size', size)
        )
          return true;
        throw new LogFullError();
      })
      .catch((e: unknown) => {
        if (e instanceof LogFullError) return false;
        throw e;
      });
  }

  /**
   * A line the server adds to the job's log itself (why it ended the job), after whatever the
   * agent sent.
   */
  async appendLine(jobId: string, line: string, at: Date): Promise<void> {
    const last = await this.db('job_log_chunks')
      .where({ job_id: jobId })
      .first<{ sequence: number | null; size: DbBigInt | null } | undefined>(
        this.db.raw('max(??) as ??', ['sequence', 'sequence']),
        this.db.raw('sum(??) as ??', ['size', 'size']),
      );
    await this.insertLine(jobId, Number(last?.sequence ?? 0) + 1, Number(last?.size ?? 0), line, at);
  }

  /** The whole log of a job no agent ran (a trigger job that could not create its build): one line. */
  async writeLine(jobId: string, line: string, at: Date): Promise<void> {
    await this.insertLine(jobId, 1, 0, line, at);
  }

  private async insertLine(jobId: string, sequence: number, offset: number, line: string, at: Date): Promise<void> {
    const content = `${line}\n`;
    await this.db('job_log_chunks').insert({ job_id: jobId, sequence, offset, size: Buffer.byteLength(content), content, created_at: at });
  }

  /**
   * Keeps the section header times the agent reported (index in the log -> Unix nanoseconds),
   * merged over those it sent before. One agent writes a job's times, so read-merge-write is enough.
   */
  async saveHeaderTimes(jobId: string, times: Map<number, number>): Promise<void> {
    await this.db.transaction(async (trx) => {
      const row = await trx('jobs').where({ id: jobId }).first('agent_header_times');
      const merged = parseJson<Record<string, number>>(row?.agent_header_times, {});
      for (const [index, at] of times) merged[String(index)] = at;
      await trx('jobs')
        .where({ id: jobId })
        .update({ agent_header_times: JSON.stringify(merged) });
    });
  }

  /** The log's size in stored bytes: every chunk, the server's own lines included. */
  /** The log sizes of several jobs at once (live pages: the jobs whose logs grew); a job with no log is absent. */
  async logSizes(jobIds: readonly string[]): Promise<Map<string, number>> {
    if (!jobIds.length) return new Map();
    const rows = await this.db('job_log_chunks')
      .whereIn('job_id', jobIds)
      .groupBy('job_id')
      .select<{ job_id: string; size: DbBigInt | null }[]>('job_id', this.db.raw('sum(??) as ??', ['size', 'size']));
    return new Map(rows.map((r) => [r.job_id, Number(r.size ?? 0)]));
  }

  async logSize(jobId: string): Promise<number> {
    const row = await this.db('job_log_chunks')
      .where({ job_id: jobId })
      .first<{ size: DbBigInt | null } | undefined>(this.db.raw('sum(??) as ??', ['size', 'size']));
    return Number(row?.size ?? 0);
  }

  /**
   * The job's log chunks in order, `LOG_PAGE_CHUNKS` at a time, each page read only when the
   * one before was used: a reader holds a few chunks, never the whole log. A header whose time
   * the agent reported (saveHeaderTimes) has that time instead of its chunk's arrival.
   */
  async *logPages(jobId: string): AsyncGenerator<LogChunk[]> {
    const job = await this.db('jobs').where({ id: jobId }).first('agent_header_times');
    const reported = parseJson<Record<string, number>>(job?.agent_header_times, {});
    let header = 0;
    const timeOf = (arrived: number) => reported[String(header++)] ?? arrived;
    for (let after = 0; ;) {
      const rows = await this.db('job_log_chunks')
        .where({ job_id: jobId })
        .where('sequence', '>', after)
        .orderBy('sequence')
        .limit(LOG_PAGE_CHUNKS)
        .select('sequence', 'content', 'size', 'header_times');
      if (!rows.length) return;
      yield rows.map((r) => ({ content: r.content, size: Number(r.size), headerTimes: parseJson<number[]>(r.header_times, []).map(timeOf) }));
      if (rows.length < LOG_PAGE_CHUNKS) return;
      after = Number(rows[rows.length - 1]!.sequence);
    }
  }

  /**
   * The log from byte `from` on (the log viewer's tail: only what it has not shown): its whole
   * size, and its text from there in pages of chunks read as the caller consumes them (the first
   * cut at `from`, which callers keep at a line's start, so never inside a character).
   */
  async logFrom(jobId: string, from: number): Promise<{ size: number; pages: AsyncGenerator<string[]> }> {
    const sizes = await this.db('job_log_chunks').where({ job_id: jobId }).orderBy('sequence').select('sequence', 'size');
    let start = 0;
    let first: { sequence: number; skip: number } | null = null;
    for (const r of sizes) {
      const size = Number(r.size);
      if (!first && start + size > from) first = { sequence: Number(r.sequence), skip: from - start };
      start += size;
    }
    const db = this.db;
    async function* pages(): AsyncGenerator<string[]> {
      if (!first) return;
      let skip = first.skip;
      for (let after = first.sequence - 1; ;) {
        const rows = await db('job_log_chunks')
          .where({ job_id: jobId })
          .where('sequence', '>', after)
          .orderBy('sequence')
          .limit(LOG_PAGE_CHUNKS)
          .select('sequence', 'content');
        if (!rows.length) return;
        yield rows.map((r, i) => (i === 0 && skip > 0 ? Buffer.from(r.content, 'utf8').subarray(skip).toString('utf8') : r.content));
        skip = 0;
        if (rows.length < LOG_PAGE_CHUNKS) return;
        after = Number(rows[rows.length - 1]!.sequence);
      }
    }
    return { size: start, pages: pages() };
  }

  /** A job's whole log as one chunk, as is (the fixture loader's history: a job that ran before the file's "now"). */
  async writeWhole(jobId: string, content: string, at: Date): Promise<void> {
    await this.db('job_log_chunks').insert({ job_id: jobId, sequence: 1, offset: 0, size: Buffer.byteLength(content), content, created_at: at });
  }
}

/** A chunk would take the log past its cap: rolls back the chunk's insert. */
class LogFullError extends Error {}

/**
 * How many log chunks a reader reads at once (each at most the body limit, 1 MiB by default):
 * SQLite reads on the event loop, a few milliseconds per MiB.
 */
const LOG_PAGE_CHUNKS = 2;
