/** A pipeline schedule as the API answers it, keys in the docs' order. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import type { PipelineSchedule } from './repository';

export function serializePipelineSchedule(s: PipelineSchedule, publicUrl: string, orgSlug: string): components['schemas']['PipelineSchedule'] {
  const pipelineUrl = `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${s.pipelineSlug}`;
  return {
    id: s.id,
    graphql_id: graphqlId('PipelineSchedule', s.id),
    url: `${pipelineUrl}/schedules/${s.id}`,
    label: s.label,
    cronline: s.cronline,
    message: s.message,
    commit: s.commit,
    branch: s.branch,
    env: s.env,
    enabled: s.enabled,
    next_build_at: s.nextBuildAt ? isoTime(s.nextBuildAt) : null,
    failed_message: s.failedMessage,
    failed_at: s.failedAt ? isoTime(s.failedAt) : null,
    created_at: isoTime(s.createdAt),
    created_by: serializeCreator(s.createdBy),
    pipeline: { id: s.pipelineId, slug: s.pipelineSlug, url: pipelineUrl },
  };
}
