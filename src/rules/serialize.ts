/** A rule as the API answers it, keys in the docs' order. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import { RULE_ACTION } from './policy';
import type { Rule } from './repository';

export function serializeRule(r: Rule, publicUrl: string, orgSlug: string): components['schemas']['Rule'] {
  return {
    uuid: r.id,
    graphql_id: graphqlId('Rule', r.id),
    organization_uuid: r.organizationId,
    url: `${publicUrl}/v2/organizations/${orgSlug}/rules/${r.id}`,
    type: r.type,
    description: r.description,
    source_type: 'pipeline',
    source_uuid: r.sourcePipelineId,
    target_type: 'pipeline',
    target_uuid: r.targetPipelineId,
    effect: 'allow',
    action: RULE_ACTION[r.type],
    value: { source_pipeline: r.sourcePipelineId, target_pipeline: r.targetPipelineId, conditions: r.conditions },
    created_at: isoTime(r.createdAt),
    created_by: serializeCreator(r.createdBy),
  };
}
