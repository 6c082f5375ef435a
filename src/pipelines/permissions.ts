/**
 * What a member may do with a pipeline: everything where teams are off or for an admin, else
 * what the access levels of their teams on it allow (the docs' team permissions). One rule for
 * requests (PipelineService) and for work done for a user outside one (a schedule's creator, a
 * trigger step's author).
 */
import type { Organization, Permissions, Role } from '../core/identity';
import { keysOf } from '../db/row-types';
import type { AccessLevel, PipelineRepository } from './repository';

export const ALL: Permissions = { read: true, build: true, edit: true };
export const NONE: Permissions = { read: false, build: false, edit: false };
const LEVELS: Record<AccessLevel, Permissions> = {
  read_only: { read: true, build: false, edit: false },
  build_and_read: { read: true, build: true, edit: false },
  manage_build_and_read: ALL,
};
export const ACCESS_LEVELS: AccessLevel[] = keysOf(LEVELS);
/** The access levels that may build. */
export const BUILD_LEVELS: AccessLevel[] = ACCESS_LEVELS.filter((l) => LEVELS[l].build);

/**
 * A member's permissions on the pipeline (`role` null: not a member, nothing); the team levels
 * are read only where teams decide.
 */
export async function memberPermissions(
  pipelines: Pick<PipelineRepository, 'teamAccessLevels'>,
  organization: Pick<Organization, 'teamsEnabled'>,
  role: Role | null,
  userId: string,
  pipelineId: string,
): Promise<Permissions> {
  if (role === null) return NONE;
  if (!organization.teamsEnabled || role === 'admin') return ALL;
  const levels = await pipelines.teamAccessLevels(pipelineId, userId);
  return levels.reduce<Permissions>(
    (acc, l) => ({ read: acc.read || LEVELS[l].read, build: acc.build || LEVELS[l].build, edit: acc.edit || LEVELS[l].edit }),
    NONE,
  );
}
