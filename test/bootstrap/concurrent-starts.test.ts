/**
 * Instances started at once on one database (issue 31) each run the first-start bootstrap
 * (src/bootstrap.ts) with the same WINDSOCK_ADMIN_TOKEN: every start succeeds, and the
 * installation has one organization, one admin user and one admin token, which works. Both on an
 * empty database (the first start) and on one with data but no admin token yet (adopting it).
 * Three bootstraps in one process on one store interleave at every query, as three processes do.
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { bootstrapIfEmpty } from '../../src/bootstrap';

const ADMIN = 'concurrent-admin-secret-0123456789-abcdef';

const installationAdmins = async (ctx: TestContext) => (await ctx.services.db('access_tokens').where({ installation_admin: true }).select('id')).length;

describeEachDatabase('first starts at once on an empty database', (get: () => TestContext) => {
  it('on an empty database: every start succeeds, one organization, one admin token', async () => {
    const { services } = get();
    const outcomes = await Promise.allSettled([0, 1, 2].map(() => bootstrapIfEmpty(services, { adminToken: ADMIN })));
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    // One of them made the installation (a given secret is never printed: no JWT).
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'rejected')).filter((v) => v !== null)).toEqual([{ jwt: null, orgSlug: 'default' }]);
    expect(await services.orgs.count()).toBe(1);
    expect(await installationAdmins(get())).toBe(1);
    await get().http().get('/v2/organizations/default').set(auth(ADMIN)).expect(200);
  });
});

describeEachDatabase('first starts at once on a database with data', (get: () => TestContext) => {
  it('on a database with data but no admin token: every start adopts the same one', async () => {
    const { services } = get();
    const { org } = await get().givenAdmin();
    const outcomes = await Promise.allSettled([0, 1, 2].map(() => bootstrapIfEmpty(services, { adminToken: ADMIN })));
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect(await installationAdmins(get())).toBe(1);
    expect(await services.db('users').where({ email: 'admin@localhost' }).select('id')).toHaveLength(1);
    await get().http().get(`/v2/organizations/${org.slug}`).set(auth(ADMIN)).expect(200);
  });
});
