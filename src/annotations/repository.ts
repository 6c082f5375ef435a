/**
 * Annotations: rows in, domain objects out. An annotation belongs to a build, and to one of its
 * jobs when its scope is `job`; `scope_key` ('' for the build's own, the job's id for a job's)
 * makes "one annotation per context" one unique index for both scopes. A write that reads
 * first (replace, append) locks the row it read (Postgres; SQLite has one writer).
 */
import type { Knex } from 'knex';
import { isPostgres } from '../db/knex';
import { toDate } from '../db/values';
import type { AnnotationsRow } from '../db/tables';
import { oneOf } from '../db/row-types';

const ANNOTATION_SCOPES = ['build', 'job'] as const;
const ANNOTATION_STYLES = ['default', 'success', 'info', 'warning', 'error'] as const;
export type AnnotationScope = (typeof ANNOTATION_SCOPES)[number];
export type AnnotationStyle = (typeof ANNOTATION_STYLES)[number];

export interface Annotation {
  id: string;
  organizationId: string;
  buildId: string;
  /** The job a `job` annotation is on; null for the build's own. */
  jobId: string | null;
  scope: AnnotationScope;
  context: string;
  style: AnnotationStyle;
  priority: number;
  /** The Markdown (or HTML) as sent, appends included. */
  body: string;
  bodyHtml: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Where an annotation's context is unique: the build's own annotations, or one job's. */
export interface AnnotationPlace {
  buildId: string;
  jobId: string | null;
}

const scopeKey = (p: AnnotationPlace) => p.jobId ?? '';

function fromRow(r: AnnotationsRow): Annotation {
  return {
    id: r.id,
    organizationId: r.organization_id,
    buildId: r.build_id,
    jobId: r.job_id ?? null,
    scope: oneOf(ANNOTATION_SCOPES, r.scope, 'annotations.scope'),
    context: r.context,
    style: oneOf(ANNOTATION_STYLES, r.style, 'annotations.style'),
    priority: Number(r.priority),
    body: r.body,
    bodyHtml: r.body_html,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

/** Highest priority first, then oldest first (the order the docs' example shows). */
const ORDER = [
  { column: 'priority', order: 'desc' },
  { column: 'created_at', order: 'asc' },
  { column: 'id', order: 'asc' },
] as const;

export class AnnotationRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): AnnotationRepository {
    return new AnnotationRepository(trx);
  }

  /** The annotation of `context` at `place`, its row locked until the transaction ends. */
  async findForUpdate(place: AnnotationPlace, context: string): Promise<Annotation | null> {
    const q = this.db('annotations').where({ build_id: place.buildId, scope_key: scopeKey(place), context });
    if (isPostgres(this.db)) q.forUpdate();
    const row = await q.first();
    return row ? fromRow(row) : null;
  }

  /** The annotation of `context` at `place`, read without a lock (a snapshot to work a write out from). */
  async find(place: AnnotationPlace, context: string): Promise<Annotation | null> {
    const row = await this.db('annotations')
      .where({ build_id: place.buildId, scope_key: scopeKey(place), context })
      .first();
    return row ? fromRow(row) : null;
  }

  /** Inserts the annotation unless its place already has one of that context (a concurrent write): true if inserted. */
  async insertIfAbsent(a: Annotation): Promise<boolean> {
    const rows = await this.db('annotations')
      .insert({
        id: a.id,
        organization_id: a.organizationId,
        build_id: a.buildId,
        job_id: a.jobId,
        scope: a.scope,
        scope_key: scopeKey(a),
        context: a.context,
        style: a.style,
        priority: a.priority,
        body: a.body,
        body_html: a.bodyHtml,
        created_at: a.createdAt,
        updated_at: a.updatedAt,
      })
      .onConflict(['build_id', 'scope_key', 'context'])
      .ignore()
      .returning('id');
    return rows.length > 0;
  }

  async update(id: string, fields: Pick<Annotation, 'style' | 'priority' | 'body' | 'bodyHtml' | 'updatedAt'>): Promise<void> {
    await this.db('annotations').where({ id }).update({
      style: fields.style,
      priority: fields.priority,
      body: fields.body,
      body_html: fields.bodyHtml,
      updated_at: fields.updatedAt,
    });
  }

  /** A page of the build's annotations, its jobs' among them. */
  /** A page of the build's annotations: its own (`build`), its jobs' (`job`) or both (`all`). */
  async listForBuild(buildId: string, scope: AnnotationScope | 'all', offset: number, limit: number): Promise<Annotation[]> {
    const q = this.db('annotations').where({ build_id: buildId });
    if (scope === 'build') q.where('scope_key', '');
    else if (scope === 'job') q.whereNot('scope_key', '');
    return (
      await q
        .orderBy([...ORDER])
        .offset(offset)
        .limit(limit)
    ).map(fromRow);
  }

  /** A page of the job's own annotations. */
  async listForJob(buildId: string, jobId: string, offset: number, limit: number): Promise<Annotation[]> {
    return (
      await this.db('annotations')
        .where({ build_id: buildId, scope_key: jobId })
        .orderBy([...ORDER])
        .offset(offset)
        .limit(limit)
    ).map(fromRow);
  }

  async findInBuild(buildId: string, id: string): Promise<Annotation | null> {
    const row = await this.db('annotations').where({ build_id: buildId, id }).first();
    return row ? fromRow(row) : null;
  }

  /** True if a row was deleted. */
  async delete(id: string): Promise<boolean> {
    return (await this.db('annotations').where({ id }).delete()) > 0;
  }

  /** Deletes the annotation of `context` at `place`: true if there was one. */
  async deleteByContext(place: AnnotationPlace, context: string): Promise<boolean> {
    return (
      (await this.db('annotations')
        .where({ build_id: place.buildId, scope_key: scopeKey(place), context })
        .delete()) > 0
    );
  }
}
