/**
 * The queries behind a status badge: the pipeline its key names, the keys not filled in yet,
 * and the latest builds (or a step's latest jobs) of a pipeline, newest first, by the
 * (pipeline_id, branch, number) and (pipeline_id, state, number) indexes.
 */
import type { Knex } from 'knex';
import type { JobsRow } from '../db/tables';

export interface BadgeBuild {
  state: string;
}

export interface BadgeStepJob {
  buildId: string;
  state: string;
  softFailed: boolean;
}

export class BadgeRepository {
  constructor(private readonly db: Knex) {}

  async pipelineIdByKey(key: string): Promise<string | null> {
    const row = await this.db('pipelines').where({ badge_key: key }).first('id');
    return row?.id ?? null;
  }

  /** Pipelines whose key is not stored yet (made before the column, or by a path that does not set it). */
  async withoutKey(limit: number): Promise<string[]> {
    return (await this.db('pipelines').whereNull('badge_key').limit(limit).select('id')).map((r: { id: string }) => r.id);
  }

  async setKey(pipelineId: string, key: string): Promise<void> {
    await this.db('pipelines').where({ id: pipelineId }).whereNull('badge_key').update({ badge_key: key });
  }

  /** The newest build in one of `states`, on `branch` when given. */
  async latestBuild(pipelineId: string, states: string[], branch: string | undefined): Promise<BadgeBuild | null> {
    const q = this.db('builds').where({ pipeline_id: pipelineId }).whereIn('state', states);
    if (branch !== undefined) q.andWhere({ branch });
    const row = await q.orderBy('number', 'desc').first('state');
    return row ? { state: row.state } : null;
  }

  /** The newest jobs labelled `step` (retried ones replaced by their retry), newest build first. */
  async latestStepJobs(pipelineId: string, step: string, branch: string | undefined, limit: number): Promise<BadgeStepJob[]> {
    const q = this.db('jobs as j').join('builds as b', 'b.id', 'j.build_id').where({ 'j.pipeline_id': pipelineId, 'j.name': step, 'j.retried': false });
    if (branch !== undefined) q.andWhere('b.branch', branch);
    const rows = await q
      .orderBy('b.number', 'desc')
      .limit(limit)
      .select<Pick<JobsRow, 'build_id' | 'state' | 'soft_failed'>[]>('j.build_id', 'j.state', 'j.soft_failed');
    return rows.map((r) => ({
      buildId: r.build_id,
      state: r.state,
      softFailed: Boolean(r.soft_failed),
    }));
  }
}
