import type { components } from '../../generated/api';
import type { Organization } from '../core/identity';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import type { PipelineTemplate } from './repository';

export function serializePipelineTemplate(t: PipelineTemplate, org: Organization, publicUrl: string): components['schemas']['PipelineTemplate'] {
  return {
    uuid: t.id,
    graphql_id: graphqlId('PipelineTemplate', t.id),
    name: t.name,
    description: t.description,
    configuration: t.configuration,
    available: t.available,
    url: `${publicUrl}/v2/organizations/${org.slug}/pipeline-templates/${t.id}`,
    web_url: `${publicUrl}/organizations/${org.slug}/pipeline-templates/${t.id}`,
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.createdBy),
    updated_at: isoTime(t.updatedAt),
    updated_by: serializeCreator(t.updatedBy),
  };
}
