import * as teamsMigration from '../../src/db/migrations/20261125180000_teams';
import { auth, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

describeEachDatabase('the teams migration', (ctx) => {
  it('keeps what teams already gave: members stay members, suite grants keep edit, each association dated by its team', async () => {
    const { org, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const member = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [member]);
    const pipeline = await givenPipeline(ctx(), org, token, { teams: [{ id: team.id, access_level: 'build_and_read' }] });
    const suite = await ctx()
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(token))
      .send({ name: 'Jest', team_ids: [team.id] })
      .expect(201);

    const db = ctx().services.db;
    await teamsMigration.down(db);
    expect(await db.schema.hasColumn('suite_teams', 'access_level')).toBe(false);
    await teamsMigration.up(db);

    const base = `/v2/organizations/${org.slug}/teams/${team.id}`;
    const teamCreatedAt = (await ctx().http().get(base).set(auth(token)).expect(200)).body.created_at;
    expect((await ctx().http().get(base).set(auth(token))).body).toMatchObject({ privacy: 'visible', default: false, members_can_create_pipelines: true });
    expect((await ctx().http().get(`${base}/members/${member.id}`).set(auth(token)).expect(200)).body).toMatchObject({
      role: 'member',
      created_at: teamCreatedAt,
    });
    expect((await ctx().http().get(`${base}/pipelines/${pipeline.id}`).set(auth(token)).expect(200)).body).toMatchObject({
      access_level: 'build_and_read',
      created_at: teamCreatedAt,
    });
    expect((await ctx().http().get(`${base}/suites/${suite.body.id}`).set(auth(token)).expect(200)).body).toMatchObject({
      access_level: ['read', 'edit'],
      created_at: teamCreatedAt,
    });
    expect((await ctx().http().get(`/v2/organizations/${org.slug}/members/${member.id}`).set(auth(token)).expect(200)).body.sso_mode).toBe('optional');
  });
});
