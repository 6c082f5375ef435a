/**
 * A build's step uploads (`step_uploads`): each pipeline upload an agent's job sent, with its
 * outcome and its definition. Queries only.
 */
import type { Knex } from 'knex';
import { keysetQuery, keysetRows, type KeysetPage } from '../../db/keyset';
import { toBool, toDate, toDateOrNull } from '../../db/values';
import type { StepUploadsRow } from '../../db/tables';
import { oneOf, oneOfOrNull } from '../../db/row-types';

const STEP_UPLOAD_STATES = ['pending', 'processing', 'applied', 'rejected', 'failed'] as const;
const STEP_UPLOAD_REJECTIONS = ['custom_error', 'validation_error', 'build_not_running_error', 'job_creation_error'] as const;
export type StepUploadState = (typeof STEP_UPLOAD_STATES)[number];
export type StepUploadRejection = (typeof STEP_UPLOAD_REJECTIONS)[number];

export interface StepUpload {
  id: string;
  buildId: string;
  sourceJobId: string;
  uploadUuid: string | null;
  state: StepUploadState;
  replaceExistingSteps: boolean;
  createdJobsCount: number | null;
  rejectionType: StepUploadRejection | null;
  message: string | null;
  /** The definition as JSON text (null: the upload could not be read as a document). */
  definition: string | null;
  definitionBytes: number;
  createdAt: Date;
  processedAt: Date | null;
}

const fromRow = (r: StepUploadsRow): StepUpload => ({
  id: String(r.id),
  buildId: String(r.build_id),
  sourceJobId: String(r.source_job_id),
  uploadUuid: r.upload_uuid ?? null,
  state: oneOf(STEP_UPLOAD_STATES, r.state, 'step_uploads.state'),
  replaceExistingSteps: toBool(r.replace_existing_steps),
  createdJobsCount: r.created_jobs_count == null ? null : Number(r.created_jobs_count),
  rejectionType: oneOfOrNull(STEP_UPLOAD_REJECTIONS, r.rejection_type, 'step_uploads.rejection_type'),
  message: r.message ?? null,
  definition: r.definition ?? null,
  definitionBytes: Number(r.definition_bytes),
  createdAt: toDate(r.created_at),
  processedAt: toDateOrNull(r.processed_at),
});

/** The columns a list reads: everything but the definition. */
const SUMMARY: Exclude<keyof StepUploadsRow, 'definition'>[] = [
  'id',
  'build_id',
  'source_job_id',
  'upload_uuid',
  'state',
  'replace_existing_steps',
  'created_jobs_count',
  'rejection_type',
  'message',
  'definition_bytes',
  'created_at',
  'processed_at',
];

export class StepUploadRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Records the upload. Its `created_at` is moved a millisecond past the build's latest upload
   * when it would not be later (two received within one millisecond): the list's newest-first
   * order is then the order they were received in.
   */
  async insert(u: StepUpload): Promise<void> {
    const latest = await this.db('step_uploads').where({ build_id: u.buildId }).max('created_at as at').first();
    const floor = latest?.at != null ? toDate(latest.at).getTime() + 1 : 0;
    const createdAt = u.createdAt.getTime() < floor ? new Date(floor) : u.createdAt;
    await this.db('step_uploads').insert({
      id: u.id,
      build_id: u.buildId,
      source_job_id: u.sourceJobId,
      upload_uuid: u.uploadUuid,
      state: u.state,
      replace_existing_steps: u.replaceExistingSteps,
      created_jobs_count: u.createdJobsCount,
      rejection_type: u.rejectionType,
      message: u.message,
      definition: u.definition,
      definition_bytes: u.definitionBytes,
      created_at: createdAt,
      processed_at: u.processedAt && u.processedAt < createdAt ? createdAt : u.processedAt,
    });
  }

  /** How many uploads the build has applied. */
  async appliedCount(buildId: string): Promise<number> {
    const row = await this.db('step_uploads').where({ build_id: buildId, state: 'applied' }).count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** Whether the build has recorded an applied upload with the agent's `uuid` (a retried send). */
  async hasApplied(buildId: string, uploadUuid: string): Promise<boolean> {
    return !!(await this.db('step_uploads').where({ build_id: buildId, upload_uuid: uploadUuid, state: 'applied' }).first('id'));
  }

  /**
   * A page of the build's uploads, newest first by (created_at, id), from a cursor (src/db/keyset.ts),
   * optionally only those `sourceJobId` made; without the definitions.
   */
  async list(buildId: string, opts: KeysetPage & { sourceJobId?: string }): Promise<{ items: StepUpload[]; more: boolean }> {
    const q = this.db('step_uploads').where({ build_id: buildId }).select(SUMMARY);
    if (opts.sourceJobId) q.where({ source_job_id: opts.sourceJobId });
    const rows = await keysetQuery(q, { at: 'created_at', id: 'id' }, opts);
    return keysetRows(rows, opts, (r) => fromRow({ ...r, definition: null }));
  }

  async find(buildId: string, id: string): Promise<StepUpload | undefined> {
    const row = await this.db('step_uploads').where({ build_id: buildId, id }).first();
    return row ? fromRow(row) : undefined;
  }
}
