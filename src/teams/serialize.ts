/** Teams, memberships, grants and organization members -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import type { OrganizationMembership, PipelineGrant, SuiteGrant, TeamMembership, TeamRecord } from './repository';

type Schemas = components['schemas'];

export function serializeTeam(t: TeamRecord): Schemas['Team'] {
  return {
    id: t.id,
    graphql_id: graphqlId('Team', t.id),
    name: t.name,
    slug: t.slug,
    description: t.description ?? '',
    privacy: t.privacy,
    default: t.isDefaultTeam,
    is_default_team: t.isDefaultTeam,
    default_member_role: t.defaultMemberRole,
    members_can_create_pipelines: t.membersCanCreatePipelines,
    members_can_create_suites: t.membersCanCreateSuites,
    members_can_destroy_suites: t.membersCanDestroySuites,
    members_can_create_registries: t.membersCanCreateRegistries,
    members_can_destroy_registries: t.membersCanDestroyRegistries,
    members_can_destroy_packages: t.membersCanDestroyPackages,
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.createdBy),
  };
}

export function serializeTeamMember(m: TeamMembership): Schemas['TeamMember'] {
  return { role: m.role, created_at: isoTime(m.createdAt), user_id: m.user.id, user_name: m.user.name };
}

export function serializeTeamPipeline(g: PipelineGrant, orgSlug: string, publicUrl: string): Schemas['TeamPipeline'] {
  return {
    access_level: g.accessLevel,
    created_at: isoTime(g.createdAt),
    pipeline_id: g.pipelineId,
    pipeline_url: `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${g.pipelineSlug}`,
  };
}

export function serializeTeamSuite(g: SuiteGrant, orgSlug: string, publicUrl: string): Schemas['TeamSuite'] {
  return {
    access_level: g.accessLevel === 'edit' ? ['read', 'edit'] : ['read'],
    created_at: isoTime(g.createdAt),
    suite_id: g.suiteId,
    suite_url: `${publicUrl}/v2/analytics/organizations/${orgSlug}/suites/${g.suiteSlug}`,
  };
}

/** `showSsoMode`: only admins, and a member looking at their own membership, see it. */
export function serializeOrganizationMember(m: OrganizationMembership, showSsoMode: boolean): Schemas['OrganizationMember'] {
  return {
    id: m.user.id,
    name: m.user.name,
    email: m.user.email,
    role: m.role,
    ...(showSsoMode ? { sso_mode: m.ssoMode } : {}),
  };
}
