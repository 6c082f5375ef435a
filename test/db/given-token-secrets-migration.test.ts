import * as givenTokenSecrets from '../../src/db/migrations/20261126111000_given_token_secrets';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('the given token secrets migration', (ctx) => {
  it('goes down and up again with issued tokens in place: they keep working, with no hash and not the admin token', async () => {
    const { token } = await ctx().givenAdmin();
    const db = ctx().services.db;
    await givenTokenSecrets.down(db);
    expect(await db.schema.hasColumn('access_tokens', 'secret_hash')).toBe(false);
    expect(await db.schema.hasColumn('access_tokens', 'installation_admin')).toBe(false);
    await givenTokenSecrets.up(db);
    const rows = await db('access_tokens').select('secret_hash', 'installation_admin');
    expect(rows.every((r) => r.secret_hash === null && !r.installation_admin)).toBe(true);
    await ctx().http().get('/v2/access-token').set(auth(token)).expect(200);
  });
});
