/**
 * Who is calling and what they may do: the user, the organizations and roles a token reaches,
 * the token's scopes, and a caller's standing inside one organization. Every area reads these;
 * none owns them, so they live here rather than in the area that happens to load them
 * (access-token loads a Principal, pipelines compute Permissions).
 */

export interface User {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
}

export type Role = 'admin' | 'member';

export interface Organization {
  id: string;
  slug: string;
  name: string;
  teamsEnabled: boolean;
  createdAt: Date;
}

export const SCOPES = [
  'read_user',
  'read_organizations',
  'read_pipelines',
  'write_pipelines',
  'read_builds',
  'write_builds',
  'read_suites',
  'write_suites',
  'read_agents',
  'write_agents',
  'read_build_logs',
  'write_build_logs',
  'read_job_env',
  'read_artifacts',
  'write_artifacts',
  'read_pipeline_templates',
  'write_pipeline_templates',
  'read_accounts',
  'read_teams',
  'write_teams',
  'write_organizations',
  'read_clusters',
  'write_clusters',
  'read_secret_details',
  'write_secrets',
  'read_notification_services',
  'write_notification_services',
  'read_audit_events',
  'read_organization_invitations',
  'write_organization_invitations',
  'read_organization_settings',
  'write_organization_settings',
  'read_rules',
  'write_rules',
  'read_organization_repository_connections',
] as const;
export type Scope = (typeof SCOPES)[number];

export interface AccessToken {
  id: string;
  description: string | null;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date;
}

/** Who is calling: the token, its user, and the organizations it may reach with the user's role in each. */
export interface Principal {
  token: AccessToken;
  user: User;
  organizations: Map<string, Role>;
  /** The same organizations by slug, loaded with the token so a request needs no other lookup. */
  organizationsBySlug: Map<string, { organization: Organization; role: Role }>;
}

/** The caller inside one organization. */
export interface Actor {
  principal: Principal;
  organization: Organization;
  role: Role;
}

/** What a caller may do with one pipeline (its team access level, or everything for an admin). */
export interface Permissions {
  read: boolean;
  build: boolean;
  edit: boolean;
}
