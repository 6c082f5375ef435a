/**
 * Issue 30 §1: the team flags the official Go client sends and reads (go-buildkite teams.go)
 * beside `members_can_create_pipelines` (and teams.md's `members_can_destroy_packages`) are stored
 * and returned, never dropped: off by default.
 */
import { auth, describeEachDatabase } from '../support/context';

const FLAGS = [
  'members_can_create_suites',
  'members_can_destroy_suites',
  'members_can_create_registries',
  'members_can_destroy_registries',
  'members_can_destroy_packages',
] as const;

describeEachDatabase('team suite and registry flags', (ctx) => {
  it('stores each flag on create and update and returns it on every read', async () => {
    const { org, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const teams = `/v2/organizations/${org.slug}/teams`;
    const plain = await ctx().http().post(teams).set(auth(token)).send({ name: 'Defaults' }).expect(201);
    for (const f of FLAGS) expect({ f, v: plain.body[f] }).toEqual({ f, v: false });

    const created = await ctx()
      .http()
      .post(teams)
      .set(auth(token))
      .send({ name: 'Suites', members_can_create_suites: true, members_can_destroy_registries: true, members_can_destroy_packages: true });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      members_can_create_suites: true,
      members_can_destroy_suites: false,
      members_can_create_registries: false,
      members_can_destroy_registries: true,
      members_can_destroy_packages: true,
    });
    const url = `${teams}/${created.body.id}`;
    const patched = await ctx()
      .http()
      .patch(url)
      .set(auth(token))
      .send({ members_can_destroy_suites: true, members_can_create_suites: false, members_can_destroy_packages: false });
    expect(patched.status).toBe(200);
    const expected = {
      members_can_create_suites: false,
      members_can_destroy_suites: true,
      members_can_create_registries: false,
      members_can_destroy_registries: true,
      members_can_destroy_packages: false,
    };
    expect(patched.body).toMatchObject(expected);
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toMatchObject(expected);
    const listed = (await ctx().http().get(teams).set(auth(token)).expect(200)).body as { id: string }[];
    expect(listed.find((t) => t.id === created.body.id)).toMatchObject(expected);
    // Not a boolean: a 422 naming the field, never dropped.
    const bad = await ctx().http().patch(url).set(auth(token)).send({ members_can_create_registries: 'sometimes' });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('members_can_create_registries');
  });
});
