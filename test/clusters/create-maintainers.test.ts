/**
 * Issue 30 §1: `maintainers` on cluster create (the official Go client's ClusterCreate) is stored,
 * not dropped: the cluster's maintainers list shows them. A bad entry is a 422 naming
 * `maintainers`, and no cluster is left behind.
 */
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('maintainers on cluster create', (ctx) => {
  it('stores the users and teams given as maintainers of the new cluster', async () => {
    const { org, token } = await ctx().givenAdmin();
    const member = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [member]);
    const clusters = `/v2/organizations/${org.slug}/clusters`;
    const created = await ctx()
      .http()
      .post(clusters)
      .set(auth(token))
      .send({ name: 'Maintained', maintainers: [{ user: member.id }, { team: team.id }] });
    expect(created.status).toBe(201);
    const list = (await ctx().http().get(`${clusters}/${created.body.id}/maintainers`).set(auth(token)).expect(200)).body as {
      actor: { id: string; type: string };
    }[];
    expect(list.map((m) => [m.actor.type, m.actor.id]).sort()).toEqual(
      [
        ['team', team.id],
        ['user', member.id],
      ].sort(),
    );
  });

  it('refuses a bad entry with a 422 naming maintainers and creates nothing', async () => {
    const { org, token } = await ctx().givenAdmin();
    const member = await ctx().givenUser(org, 'member');
    const other = await ctx().givenAdmin();
    const clusters = `/v2/organizations/${org.slug}/clusters`;
    for (const [i, maintainers] of [
      [{ user: other.user.id }],
      [{ user: member.id, team: member.id }],
      [{}],
      [{ user: member.id }, { user: member.id }],
    ].entries()) {
      const res = await ctx()
        .http()
        .post(clusters)
        .set(auth(token))
        .send({ name: `Refused ${i}`, maintainers });
      expect({ i, status: res.status, field: res.body.errors?.[0]?.field }).toEqual({ i, status: 422, field: 'maintainers' });
    }
    const all = (await ctx().http().get(clusters).set(auth(token)).expect(200)).body as { name: string }[];
    expect(all.filter((c) => c.name.startsWith('Refused'))).toEqual([]);
  });
});
