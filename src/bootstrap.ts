/**
 * First start on an empty database: an organization, an admin user and a token with every
 * scope, so a fresh install answers requests at once. The token is returned to be printed once;
 * it is never stored or shown again (only its id is stored).
 */
import type { Services } from './services';
import { isUniqueViolation } from './db/knex';
import { SCOPES } from './core/identity';
import { clock } from './core/clock';

export interface BootstrapOptions {
  /** A token to create instead of a random one (WINDSOCK_ADMIN_TOKEN). */
  adminToken?: string;
}

export const BOOTSTRAP = { orgName: 'Default Organization', orgSlug: 'default', userName: 'Admin', userEmail: 'admin@localhost' };

export async function bootstrapIfEmpty(s: Services, _options: BootstrapOptions = {}): Promise<{ jwt: string; orgSlug: string } | null> {
  if ((await s.orgs.count()) > 0) return null;
  let org;
  let user;
  try {
    ({ org, user } = await s.db.transaction(async (trx) => {
      const org = await s.orgs.create({ slug: BOOTSTRAP.orgSlug, name: BOOTSTRAP.orgName }, trx);
      const user =
        (await s.users.findByEmail(BOOTSTRAP.userEmail, trx)) ?? (await s.users.create({ name: BOOTSTRAP.userName, email: BOOTSTRAP.userEmail }, trx));
      await s.orgs.addMember(org.id, user.id, 'admin', trx);
      return { org, user };
    }));
  } catch (err) {
    // Another process bootstrapped at the same moment: theirs stands.
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  const { jwt } = await s.tokens.create({
    userId: user.id,
    organizationIds: [org.id],
    scopes: [...SCOPES],
    description: 'Created on first start',
    expiresAt: new Date(clock.nowMs() + 365 * 24 * 3600 * 1000),
  });
  return { jwt, orgSlug: org.slug };
}
