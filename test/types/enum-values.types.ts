/**
 * Compiled by `npm run typecheck`, never run: the runtime lists of the spec's enums
 * (src/core/enum-values.ts) refuse to compile when they miss a value or hold one the enum lacks,
 * so a value the spec gains fails the build until the list has it.
 */
import type { components } from '../../generated/api';
import { everyValue } from '../../src/core/enum-values';
import { SCOPES } from '../../src/notification-services/service';
import type { ServiceScope } from '../../src/notification-services/repository';
import type { TeamRole } from '../../src/teams/repository';

type Role = components['schemas']['TeamMemberRole'];

export const roles = everyValue<Role>()(['member', 'maintainer'] as const satisfies readonly Role[]);

// @ts-expect-error: `maintainer` is missing
export const missing = everyValue<Role>()(['member'] as const satisfies readonly Role[]);

// @ts-expect-error: `owner` is no TeamMemberRole
export const extra = everyValue<Role>()(['member', 'maintainer', 'owner'] as const);

// The aliases are the spec's types, not copies: the same values both ways.
export const sameRole: TeamRole[] = ['member', 'maintainer'] satisfies Role[];
export const scopes: readonly ServiceScope[] = SCOPES;
export const scopeList: readonly components['schemas']['NotificationServiceScope'][] = SCOPES;
