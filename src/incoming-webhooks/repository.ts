/**
 * The pull requests open from the branches of each pipeline's own repository, as the provider's
 * deliveries last told them (migration 20261129120000): a push to such a branch builds with its
 * pull request's details (./service.ts). Queries only.
 */
import type { Knex } from 'knex';
import type { PullRequest } from '../builds/model';
import { jsonColumn } from '../db/row-types';
import { isRecord } from '../core/guards';

const isPullRequest = (v: unknown): v is PullRequest => isRecord(v) && typeof v.id === 'string';

export class OpenPullRequestRepository {
  constructor(private readonly db: Knex) {}

  /** The pull request open from the branch, or null. */
  async find(pipelineId: string, branch: string): Promise<PullRequest | null> {
    const row = await this.db('open_pull_requests').where({ pipeline_id: pipelineId, branch }).first('pull_request');
    return row ? jsonColumn(row.pull_request, null, isPullRequest, 'open_pull_requests.pull_request') : null;
  }

  /** The branch's open pull request is now `pr` (its details as a delivery told them at `at`). */
  async record(pipelineId: string, branch: string, pr: PullRequest, at: Date): Promise<void> {
    await this.db('open_pull_requests')
      .insert({ pipeline_id: pipelineId, branch, pull_request: JSON.stringify(pr), updated_at: at })
      .onConflict(['pipeline_id', 'branch'])
      .merge(['pull_request', 'updated_at']);
  }

  /** Pull request `id` from the branch was closed: it is no longer kept (another one since opened from the branch stays). */
  async remove(pipelineId: string, branch: string, id: string): Promise<void> {
    const open = await this.find(pipelineId, branch);
    if (open?.id === id) await this.db('open_pull_requests').where({ pipeline_id: pipelineId, branch }).del();
  }
}
