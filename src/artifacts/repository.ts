/** The `artifacts` table: Knex queries, rows in and artifacts out. */
import type { Knex } from 'knex';
import { orWhereMatches } from '../db/knex';
import { toDate, toDateOrNull } from '../db/values';
import type { ArtifactsRow } from '../db/tables';
import { oneOf } from '../db/row-types';

export const ARTIFACT_STATES = ['new', 'error', 'finished', 'deleted', 'expired'] as const;
export type ArtifactState = (typeof ARTIFACT_STATES)[number];

export interface Artifact {
  id: string;
  jobId: string;
  buildId: string;
  /** The service's id of the batch it was registered in (the upload form names it). */
  batchId: string;
  /** The agent's id of that batch (idempotency), if it sent one. */
  clientBatchId: string | null;
  batchIndex: number;
  state: ArtifactState;
  path: string;
  contentType: string;
  fileSize: number;
  sha1sum: string;
  sha256sum: string | null;
  /** The storage address of the uploaded content (its SHA-256), once uploaded and checked. */
  contentSha256: string | null;
  createdAt: Date;
  finishedAt: Date | null;
  deletedAt: Date | null;
}

function fromRow(r: ArtifactsRow): Artifact {
  return {
    id: r.id,
    jobId: r.job_id,
    buildId: r.build_id,
    batchId: r.batch_id,
    clientBatchId: r.client_batch_id ?? null,
    batchIndex: Number(r.batch_index),
    state: oneOf(ARTIFACT_STATES, r.state, 'artifacts.state'),
    path: r.path,
    contentType: r.content_type,
    fileSize: Number(r.file_size),
    sha1sum: r.sha1sum,
    sha256sum: r.sha256sum ?? null,
    contentSha256: r.content_sha256 ?? null,
    createdAt: toDate(r.created_at),
    finishedAt: toDateOrNull(r.finished_at),
    deletedAt: toDateOrNull(r.deleted_at),
  };
}

function toRow(a: Artifact): ArtifactsRow {
  return {
    id: a.id,
    job_id: a.jobId,
    build_id: a.buildId,
    batch_id: a.batchId,
    client_batch_id: a.clientBatchId,
    batch_index: a.batchIndex,
    state: a.state,
    path: a.path,
    content_type: a.contentType,
    file_size: a.fileSize,
    sha1sum: a.sha1sum,
    sha256sum: a.sha256sum,
    content_sha256: a.contentSha256,
    created_at: a.createdAt,
    finished_at: a.finishedAt,
    deleted_at: a.deletedAt,
  };
}

/** Oldest first; the batch order breaks ties within a batch. */
const ORDER = [
  { column: 'created_at', order: 'asc' },
  { column: 'batch_index', order: 'asc' },
  { column: 'id', order: 'asc' },
] as const;

export class ArtifactRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex.Transaction): ArtifactRepository {
    return new ArtifactRepository(trx);
  }

  async insertMany(artifacts: Artifact[]): Promise<void> {
    // Chunks keep each statement under SQLite's bound-parameter limit.
    for (let i = 0; i < artifacts.length; i += 50) await this.db('artifacts').insert(artifacts.slice(i, i + 50).map(toRow));
  }

  async byClientBatch(jobId: string, clientBatchId: string): Promise<Artifact[]> {
    const rows = await this.db('artifacts').where({ job_id: jobId, client_batch_id: clientBatchId }).orderBy('batch_index');
    return rows.map(fromRow);
  }

  /** The artifacts of a batch with this path, in batch order. */
  async inBatchWithPath(batchId: string, path: string): Promise<Artifact[]> {
    const rows = await this.db('artifacts').where({ batch_id: batchId, path }).orderBy('batch_index');
    return rows.map(fromRow);
  }

  async byIds(ids: string[]): Promise<Artifact[]> {
    if (ids.length === 0) return [];
    const rows = await this.db('artifacts').whereIn('id', ids);
    return rows.map(fromRow);
  }

  async findById(id: string): Promise<Artifact | null> {
    const row = await this.db('artifacts').where({ id }).first();
    return row ? fromRow(row) : null;
  }

  /** The bytes the job's artifacts take or will take (deleted ones excluded). */
  async jobBytes(jobId: string): Promise<number> {
    const row = await this.db('artifacts').where({ job_id: jobId }).whereNot({ state: 'deleted' }).sum({ total: 'file_size' }).first();
    return Number(row?.total ?? 0);
  }

  /** Records the checked content of an artifact still waiting for it; false when it has some already. */
  async setContent(id: string, contentSha256: string): Promise<boolean> {
    return (await this.db('artifacts').where({ id, state: 'new' }).whereNull('content_sha256').update({ content_sha256: contentSha256 })) > 0;
  }

  async setState(ids: string[], state: ArtifactState, finishedAt: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db('artifacts').whereIn('id', ids).whereNot({ state: 'deleted' }).update({ state, finished_at: finishedAt });
  }

  /** A page of the artifacts of a build or a job (not deleted), with their total. */
  /** A page of the build's or job's artifacts that are not deleted, optionally in one `state` and with a `path` (`*`: any run of characters). */
  async page(
    where: { build_id: string } | { job_id: string },
    filter: { state?: ArtifactState; path?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: Artifact[]; total: number }> {
    const base = () => {
      const q = this.db('artifacts').where(where).whereNot({ state: 'deleted' });
      if (filter.state) q.where({ state: filter.state });
      const { path } = filter;
      if (path !== undefined) q.where((w) => (path.includes('*') ? orWhereMatches(w, 'path', path) : w.where({ path })));
      return q;
    };
    const [rows, count] = await Promise.all([
      base()
        .orderBy([...ORDER])
        .offset(offset)
        .limit(limit),
      base().count({ n: '*' }).first(),
    ]);
    return { items: rows.map(fromRow), total: Number(count?.n ?? 0) };
  }

  /** Every artifact of the build that is not deleted (optionally in one state), oldest first. */
  async ofBuild(buildId: string, state?: ArtifactState): Promise<Artifact[]> {
    const q = this.db('artifacts').where({ build_id: buildId }).whereNot({ state: 'deleted' });
    if (state) q.andWhere({ state });
    return (await q.orderBy([...ORDER])).map(fromRow);
  }

  /** The newest finished artifact of the build with this path, if any (what `artifact://path` in an annotation names). */
  async newestFinishedWithPath(buildId: string, path: string): Promise<Artifact | null> {
    const row = await this.db('artifacts')
      .where({ build_id: buildId, path, state: 'finished' })
      .whereNotNull('content_sha256')
      .orderBy(ORDER.map((o) => ({ column: o.column, order: 'desc' as const })))
      .first();
    return row ? fromRow(row) : null;
  }

  /** Marks it deleted and forgets its content address; answers the address it had. */
  async markDeleted(id: string, at: Date): Promise<string | null> {
    const row = await this.db('artifacts').where({ id }).whereNot({ state: 'deleted' }).first('content_sha256');
    if (!row) return null;
    await this.db('artifacts').where({ id }).update({ state: 'deleted', deleted_at: at, content_sha256: null });
    return row.content_sha256 ?? null;
  }

  /** Whether any artifact (but `except`) uses the content at this address. */
  async contentInUse(contentSha256: string, except?: string): Promise<boolean> {
    const query = this.db('artifacts').where({ content_sha256: contentSha256 });
    if (except) query.whereNot({ id: except });
    return Boolean(await query.first('id'));
  }
}
