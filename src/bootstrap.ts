/**
 * First start on an empty database: an organization, an admin user and a token with every
 * scope (the installation admin token), so a fresh install answers requests at once.
 *
 * The admin token's secret is either issued (a JWT, returned to be printed once and never
 * stored) or given (WINDSOCK_ADMIN_TOKEN: only its SHA-256 is stored, so a consumer's CI knows it
 * in advance). A given one is checked on every start: too short or the wrong characters, or a
 * database whose admin token is another one, stops the start with a message naming the setting.
 * The same value again is fine (restarts are idempotent). On a database that already holds data
 * but no admin token (a fixture file loaded it, or it predates the admin token), a given admin
 * token is made then, for the admin user, reaching every organization that exists at that moment.
 */
import type { Knex } from 'knex';
import type { Services } from './services';
import { ConfigError } from './config';
import { ValidationError } from './core/errors';
import { isUniqueViolation } from './db/knex';
import { SCOPES } from './core/identity';
import { clock } from './core/clock';
import { givenSecretProblem, hashSecret } from './access-token/service';

export const BOOTSTRAP = { orgName: 'Default Organization', orgSlug: 'default', userName: 'Admin', userEmail: 'admin@localhost' };

/** A given admin token that cannot be used; the process stops with its message (exit 2). */
export class AdminTokenError extends ConfigError {}

export interface BootstrapOptions {
  /** WINDSOCK_ADMIN_TOKEN (--admin-token): the admin token's secret, instead of an issued JWT. */
  adminToken?: string;
}

/** What a first start made: the JWT to print once (null when the secret was given, so nothing secret is printed). */
export interface Bootstrapped {
  jwt: string | null;
  orgSlug: string;
}

const ADMIN_TOKEN_YEARS = 100;

export async function bootstrapIfEmpty(s: Services, options: BootstrapOptions = {}): Promise<Bootstrapped | null> {
  const { adminToken } = options;
  if (adminToken !== undefined) {
    const problem = givenSecretProblem(adminToken);
    if (problem) throw new AdminTokenError(`WINDSOCK_ADMIN_TOKEN ${problem} (letters, digits, -, _, ~, +, / or =)`);
  }
  if ((await s.orgs.count()) > 0) return adminToken === undefined ? null : adoptAdminToken(s, adminToken);
  let org;
  let user;
  try {
    ({ org, user } = await s.db.transaction(async (trx) => {
      const org = await s.orgs.create({ slug: BOOTSTRAP.orgSlug, name: BOOTSTRAP.orgName }, trx);
      const user = await adminUser(s, trx);
      await s.orgs.addMember(org.id, user.id, 'admin', trx);
      return { org, user };
    }));
  } catch (err) {
    // Another process bootstrapped at the same moment: theirs stands.
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  const input = { userId: user.id, organizationIds: [org.id], scopes: [...SCOPES], description: 'Created on first start', expiresAt: adminExpiry() };
  if (adminToken !== undefined) {
    // Another process starting at once may have found the organization and adopted the same secret first.
    if (!(await storedByAnother(s, adminToken, () => s.tokens.createWithSecret({ ...input, secret: adminToken, installationAdmin: true })))) {
      throw new AdminTokenError('WINDSOCK_ADMIN_TOKEN differs from the admin token another process starting at once gave this database');
    }
    return { jwt: null, orgSlug: org.slug };
  }
  const { jwt } = await s.tokens.create(input, { installationAdmin: true });
  return { jwt, orgSlug: org.slug };
}

/**
 * A database with data: the given admin token must be its admin token, or become it when it has
 * none. Several processes starting at once (instances behind a load balancer) may all find none:
 * each tries; one that loses a race (the admin user, a membership or the token written by another
 * meanwhile) looks again, and finds the admin user, then the token, the others made.
 */
async function adoptAdminToken(s: Services, adminToken: string): Promise<null> {
  for (let attempt = 1; ; attempt++) {
    const existing = await s.tokens.installationAdmin();
    if (existing) {
      if (existing.secretHash === hashSecret(adminToken)) return null;
      throw new AdminTokenError(
        'WINDSOCK_ADMIN_TOKEN differs from the admin token this database already has: give the same value, or unset it (revoke the old one to change it)',
      );
    }
    try {
      await makeAdminToken(s, adminToken);
      return null;
    } catch (err) {
      if (attempt >= ADOPT_ATTEMPTS || !lostToAnotherStart(err)) throw err;
    }
  }
}

/** How many times a start looks again after losing a race to another start. */
const ADOPT_ATTEMPTS = 5;

/** A row another process's start wrote first: a unique index refused ours (the token's secret one as a validation error). */
function lostToAnotherStart(err: unknown): boolean {
  return isUniqueViolation(err) || err instanceof ValidationError;
}

/** The admin user (made if missing), a member of every organization, and the admin token with the given secret. */
async function makeAdminToken(s: Services, adminToken: string): Promise<void> {
  const organizationIds = await s.orgs.allIds();
  const user = await s.db.transaction(async (trx) => {
    const user = await adminUser(s, trx);
    const memberships = await s.orgs.membershipsOf(user.id, trx);
    for (const id of organizationIds) if (!memberships.has(id)) await s.orgs.addMember(id, user.id, 'admin', trx);
    return user;
  });
  await s.tokens.createWithSecret({
    userId: user.id,
    organizationIds,
    scopes: [...SCOPES],
    description: 'Installation admin token (WINDSOCK_ADMIN_TOKEN)',
    expiresAt: adminExpiry(),
    secret: adminToken,
    installationAdmin: true,
  });
}

/**
 * Runs `store` (writing the admin token); when another process stored an admin token first, true
 * if it has the same secret (theirs stands), false if another.
 */
async function storedByAnother(s: Services, adminToken: string, store: () => Promise<unknown>): Promise<boolean> {
  try {
    await store();
    return true;
  } catch (err) {
    if (!lostToAnotherStart(err)) throw err;
    const existing = await s.tokens.installationAdmin();
    if (!existing) throw err;
    return existing.secretHash === hashSecret(adminToken);
  }
}

async function adminUser(s: Services, trx: Knex) {
  return (await s.users.findByEmail(BOOTSTRAP.userEmail, trx)) ?? (await s.users.create({ name: BOOTSTRAP.userName, email: BOOTSTRAP.userEmail }, trx));
}

/** The admin token is the installation's own: it lasts as long as the installation (100 years). */
function adminExpiry(): Date {
  const at = clock.now();
  at.setUTCFullYear(at.getUTCFullYear() + ADMIN_TOKEN_YEARS);
  return at;
}
