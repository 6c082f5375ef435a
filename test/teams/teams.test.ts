/**
 * Teams, team members, team pipelines, team suites and organization members through the REST
 * API, as the Teams and Organization members APIs document them: shapes against the documented
 * examples, who may manage what (admins, maintainers, members), secret teams, default teams,
 * `members_can_create_pipelines`, and team access levels enforced on pipelines and suites.
 */
import listTeamsSample from '../fixtures/samples/teams__01_list-teams.json';
import getTeamSample from '../fixtures/samples/teams__02_get-a-team.json';
import createTeamSample from '../fixtures/samples/teams__03_create-a-team.json';
import updateTeamSample from '../fixtures/samples/teams__04_update-a-team.json';
import listMembersSample from '../fixtures/samples/team_members__01_list-team-members.json';
import getMemberSample from '../fixtures/samples/team_members__02_get-a-team-member.json';
import createMemberSample from '../fixtures/samples/team_members__03_create-a-team-member.json';
import updateMemberSample from '../fixtures/samples/team_members__04_update-a-team-member.json';
import listTeamPipelinesSample from '../fixtures/samples/team_pipelines__01_list-team-pipelines.json';
import getTeamPipelineSample from '../fixtures/samples/team_pipelines__02_get-a-team-pipeline.json';
import createTeamPipelineSample from '../fixtures/samples/team_pipelines__03_create-a-team-pipeline.json';
import updateTeamPipelineSample from '../fixtures/samples/team_pipelines__04_update-a-team-pipeline.json';
import listTeamSuitesSample from '../fixtures/samples/team_suites__01_list-team-suites.json';
import getTeamSuiteSample from '../fixtures/samples/team_suites__02_get-a-team-suite.json';
import createTeamSuiteSample from '../fixtures/samples/team_suites__03_create-a-team-suite.json';
import updateTeamSuiteSample from '../fixtures/samples/team_suites__04_update-a-team-suite.json';
import listOrgMembersSample from '../fixtures/samples/organization_members__01_list-organization-members.json';
import getOrgMemberSample from '../fixtures/samples/organization_members__02_get-an-organization-member.json';
import updateOrgMemberSample from '../fixtures/samples/organization_members__03_update-an-organization-member.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { givenPipeline } from '../support/given';
import type { Organization, User } from '../../src/core/identity';

async function givenSuite(ctx: TestContext, org: Organization, token: string, teamIds: string[] = []) {
  const res = await ctx
    .http()
    .post(`/v2/analytics/organizations/${org.slug}/suites`)
    .set(auth(token))
    .send({ name: `Suite ${Math.random().toString(36).slice(2, 8)}`, team_ids: teamIds });
  if (res.status !== 201) throw new Error(`suite: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; slug: string };
}

describeEachDatabase('teams', (ctx) => {
  let org: Organization;
  let admin: User;
  let adminToken: string;
  let base: string;

  beforeAll(async () => {
    ({ org, user: admin, token: adminToken } = await ctx().givenAdmin({ teamsEnabled: true }));
    base = `/v2/organizations/${org.slug}`;
  });

  const api = () => ctx().http();
  const memberWithToken = async () => {
    const user = await ctx().givenUser(org, 'member');
    return { user, token: await ctx().givenToken(user, [org]) };
  };
  const createTeam = async (body: Record<string, unknown>) => {
    const res = await api().post(`${base}/teams`).set(auth(adminToken)).send(body);
    expect(res.status).toBe(201);
    return res.body as { id: string; slug: string };
  };

  it('creates, lists, gets, updates and deletes teams in the documented shapes', async () => {
    const created = await api()
      .post(`${base}/teams`)
      .set(auth(adminToken))
      .send({
        name: 'Barefoot Backenders',
        description: 'Backend engineers at Acme Inc',
        privacy: 'secret',
        is_default_team: false,
        default_member_role: 'member',
        members_can_create_pipelines: true,
      })
      .expect(201);
    expectConforms(created.body, [createTeamSample], responseSchema('createTeam', '201'));
    expect(created.body).toMatchObject({
      name: 'Barefoot Backenders',
      slug: 'barefoot-backenders',
      description: 'Backend engineers at Acme Inc',
      privacy: 'secret',
      default: false,
      is_default_team: false,
      default_member_role: 'member',
      members_can_create_pipelines: true,
      created_by: { id: admin.id, email: admin.email },
    });
    const id = created.body.id as string;

    const list = await api().get(`${base}/teams`).set(auth(adminToken)).expect(200);
    expectConforms(list.body, [listTeamsSample], responseSchema('listTeams'));
    expect(list.body.map((t: { id: string }) => t.id)).toContain(id);
    const got = await api().get(`${base}/teams/${id}`).set(auth(adminToken)).expect(200);
    expectConforms(got.body, [getTeamSample], responseSchema('getTeam'));
    expect(got.body).toEqual(created.body);

    const updated = await api()
      .patch(`${base}/teams/${id}`)
      .set(auth(adminToken))
      .send({
        name: 'New and Improved Backenders V2!',
        description: 'Updated',
        privacy: 'visible',
        is_default_team: true,
        default_member_role: 'maintainer',
        members_can_create_pipelines: false,
      })
      .expect(200);
    expectConforms(updated.body, [updateTeamSample], responseSchema('updateTeam'));
    expect(updated.body).toMatchObject({
      id,
      name: 'New and Improved Backenders V2!',
      slug: 'new-and-improved-backenders-v2',
      privacy: 'visible',
      default: true,
      default_member_role: 'maintainer',
      members_can_create_pipelines: false,
    });

    // A second team of the same name is refused; bad values name their field.
    const dup = await api().post(`${base}/teams`).set(auth(adminToken)).send({ name: 'New and Improved Backenders V2!' }).expect(422);
    expect(dup.body.errors).toEqual([expect.objectContaining({ field: 'name' })]);
    const bad = await api().post(`${base}/teams`).set(auth(adminToken)).send({ name: 'X', privacy: 'hidden' }).expect(422);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'privacy' })]);
    await api().post(`${base}/teams`).set(auth(adminToken)).send({ description: 'no name' }).expect(422);

    await api().delete(`${base}/teams/${id}`).set(auth(adminToken)).expect(204);
    expect((await api().get(`${base}/teams/${id}`).set(auth(adminToken)).expect(404)).body).toEqual({ message: 'No team found' });
  });

  it('lets only admins create and delete teams; maintainers update theirs; members neither', async () => {
    const team = await createTeam({ name: `Crew ${Date.now()}` });
    const maintainer = await memberWithToken();
    const member = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: maintainer.user.id, role: 'maintainer' }).expect(201);
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: member.user.id }).expect(201);

    expect((await api().post(`${base}/teams`).set(auth(member.token)).send({ name: 'Mine' })).status).toBe(403);
    expect((await api().post(`${base}/teams`).set(auth(maintainer.token)).send({ name: 'Mine' })).status).toBe(403);
    expect((await api().patch(`${base}/teams/${team.id}`).set(auth(member.token)).send({ description: 'x' })).status).toBe(403);
    const renamed = await api().patch(`${base}/teams/${team.id}`).set(auth(maintainer.token)).send({ description: 'by the maintainer' }).expect(200);
    expect(renamed.body.description).toBe('by the maintainer');
    expect((await api().delete(`${base}/teams/${team.id}`).set(auth(maintainer.token))).status).toBe(403);
    await api().get(`${base}/teams/${team.id}`).set(auth(adminToken)).expect(200);
  });

  it('shows secret teams only to their members and admins', async () => {
    const secret = await createTeam({ name: `Secret ${Date.now()}`, privacy: 'secret' });
    const visible = await createTeam({ name: `Visible ${Date.now()}` });
    const insider = await memberWithToken();
    const outsider = await memberWithToken();
    await api().post(`${base}/teams/${secret.id}/members`).set(auth(adminToken)).send({ user_id: insider.user.id }).expect(201);

    const ids = async (token: string) => (await api().get(`${base}/teams?per_page=100`).set(auth(token)).expect(200)).body.map((t: { id: string }) => t.id);
    expect(await ids(outsider.token)).toEqual(expect.arrayContaining([visible.id]));
    expect(await ids(outsider.token)).not.toContain(secret.id);
    expect(await ids(insider.token)).toEqual(expect.arrayContaining([secret.id, visible.id]));
    expect(await ids(adminToken)).toEqual(expect.arrayContaining([secret.id, visible.id]));
    const hidden = await api().get(`${base}/teams/${secret.id}`).set(auth(outsider.token));
    expect({ status: hidden.status, body: hidden.body }).toEqual({ status: 404, body: { message: 'No team found' } });
    expect((await api().get(`${base}/teams/${secret.id}/members`).set(auth(outsider.token))).status).toBe(404);
    await api().get(`${base}/teams/${secret.id}`).set(auth(insider.token)).expect(200);
    // user_id keeps the teams that user belongs to.
    const mine = await api().get(`${base}/teams?user_id=${insider.user.id}`).set(auth(adminToken)).expect(200);
    expect(mine.body.map((t: { id: string }) => t.id)).toEqual([secret.id]);
  });

  it('adds, gets, lists, changes and removes team members with roles', async () => {
    const team = await createTeam({ name: `Roles ${Date.now()}`, default_member_role: 'maintainer' });
    const ann = await memberWithToken();
    const bob = await memberWithToken();
    const path = `${base}/teams/${team.id}/members`;
    const added = await api().post(path).set(auth(adminToken)).send({ user_id: ann.user.id, role: 'member' }).expect(201);
    expectConforms(added.body, [createMemberSample], responseSchema('createTeamMember', '201'));
    expect(added.body).toMatchObject({ role: 'member', user_id: ann.user.id, user_name: ann.user.name });
    // Without a role, the team's default_member_role; the documentation's path ends in a slash, which is the same path.
    expect((await api().post(`${path}/`).set(auth(adminToken)).send({ user_id: bob.user.id }).expect(201)).body.role).toBe('maintainer');
    expect((await api().post(path).set(auth(adminToken)).send({ user_id: bob.user.id }).expect(422)).body.errors[0].field).toBe('user_id');
    // Only members of the organization may join.
    const stranger = await ctx().givenUser();
    expect((await api().post(path).set(auth(adminToken)).send({ user_id: stranger.id }).expect(422)).body.errors[0]).toEqual({
      field: 'user_id',
      code: 'is not a member of this organization',
    });

    const list = await api().get(path).set(auth(ann.token)).expect(200);
    expectConforms(list.body, [listMembersSample], responseSchema('listTeamMembers'));
    expect(list.body.map((m: { user_id: string }) => m.user_id).sort()).toEqual([ann.user.id, bob.user.id].sort());
    expectConforms((await api().get(`${path}/${ann.user.id}`).set(auth(ann.token)).expect(200)).body, [getMemberSample], responseSchema('getTeamMember'));

    // A member cannot change roles or remove others; a maintainer can; anyone may leave.
    expect((await api().patch(`${path}/${bob.user.id}`).set(auth(ann.token)).send({ role: 'member' })).status).toBe(403);
    expect((await api().delete(`${path}/${bob.user.id}`).set(auth(ann.token))).status).toBe(403);
    const changed = await api().patch(`${path}/${ann.user.id}`).set(auth(bob.token)).send({ role: 'maintainer' }).expect(200);
    expectConforms(changed.body, [updateMemberSample], responseSchema('updateTeamMember'));
    expect(changed.body.role).toBe('maintainer');
    await api().delete(`${path}/${bob.user.id}`).set(auth(bob.token)).expect(204);
    await api().get(`${path}/${bob.user.id}`).set(auth(adminToken)).expect(404);
    expect((await api().patch(`${path}/${ann.user.id}`).set(auth(adminToken)).send({ role: 'owner' })).status).toBe(422);
  });

  it('puts new organization members in the default teams with their default role', async () => {
    const team = await createTeam({ name: `Everyone ${Date.now()}`, is_default_team: true, default_member_role: 'maintainer' });
    const newcomer = await ctx().givenUser(org, 'member');
    const m = await api().get(`${base}/teams/${team.id}/members/${newcomer.id}`).set(auth(adminToken)).expect(200);
    expect(m.body.role).toBe('maintainer');
  });

  it('grants pipelines at an access level the pipeline then enforces', async () => {
    const team = await createTeam({ name: `Builders ${Date.now()}` });
    const dev = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: dev.user.id }).expect(201);
    const p = await givenPipeline(ctx(), org, adminToken);
    const pipelinePath = `${base}/pipelines/${p.slug}`;
    const grants = `${base}/teams/${team.id}/pipelines`;

    // Not granted: the pipeline does not exist for the member.
    expect((await api().get(pipelinePath).set(auth(dev.token))).status).toBe(404);

    const granted = await api().post(grants).set(auth(adminToken)).send({ pipeline_id: p.id, access_level: 'read_only' }).expect(201);
    expectConforms(granted.body, [createTeamPipelineSample], responseSchema('createTeamPipeline', '201'));
    expect(granted.body).toMatchObject({ access_level: 'read_only', pipeline_id: p.id, pipeline_url: `http://windsock.test${pipelinePath}` });
    expect((await api().post(grants).set(auth(adminToken)).send({ pipeline_id: p.id })).status).toBe(422);
    expectConforms((await api().get(grants).set(auth(dev.token)).expect(200)).body, [listTeamPipelinesSample], responseSchema('listTeamPipelines'));
    expectConforms((await api().get(`${grants}/${p.id}`).set(auth(dev.token)).expect(200)).body, [getTeamPipelineSample], responseSchema('getTeamPipeline'));

    // read_only: reads, no builds, no edits.
    await api().get(pipelinePath).set(auth(dev.token)).expect(200);
    expect((await api().post(`${pipelinePath}/builds`).set(auth(dev.token)).send({ commit: 'HEAD', branch: 'main' })).status).toBe(403);
    expect((await api().patch(pipelinePath).set(auth(dev.token)).send({ description: 'x' })).status).toBe(403);

    // build_and_read: builds, no edits.
    const updated = await api().patch(`${grants}/${p.id}`).set(auth(adminToken)).send({ access_level: 'build_and_read' }).expect(200);
    expectConforms(updated.body, [updateTeamPipelineSample], responseSchema('updateTeamPipeline'));
    const build = await api().post(`${pipelinePath}/builds`).set(auth(dev.token)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    await api().put(`${pipelinePath}/builds/${build.body.number}/cancel`).set(auth(dev.token)).expect(200);
    expect((await api().patch(pipelinePath).set(auth(dev.token)).send({ description: 'x' })).status).toBe(403);

    // manage_build_and_read: edits too.
    await api().patch(`${grants}/${p.id}`).set(auth(adminToken)).send({ access_level: 'manage_build_and_read' }).expect(200);
    await api().patch(pipelinePath).set(auth(dev.token)).send({ description: 'edited by the team' }).expect(200);

    // Taken away: gone again.
    await api().delete(`${grants}/${p.id}`).set(auth(adminToken)).expect(204);
    expect((await api().get(pipelinePath).set(auth(dev.token))).status).toBe(404);
    expect((await api().get(`${grants}/${p.id}`).set(auth(adminToken))).status).toBe(404);
    // An unknown pipeline id is a field error.
    const unknown = await api().post(grants).set(auth(adminToken)).send({ pipeline_id: 'c0ffee00-0000-4000-8000-000000000000' }).expect(422);
    expect(unknown.body.errors).toEqual([{ field: 'pipeline_id', code: 'is not a pipeline of this organization' }]);
  });

  it('lets maintainers grant only pipelines they manage themselves', async () => {
    const team = await createTeam({ name: `Maint ${Date.now()}` });
    const maintainer = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: maintainer.user.id, role: 'maintainer' }).expect(201);
    const theirs = await givenPipeline(ctx(), org, maintainer.token, { teams: [team.id] });
    const other = await givenPipeline(ctx(), org, adminToken);
    const team2 = await createTeam({ name: `Maint2 ${Date.now()}` });
    await api().post(`${base}/teams/${team2.id}/members`).set(auth(adminToken)).send({ user_id: maintainer.user.id, role: 'maintainer' }).expect(201);
    await api().post(`${base}/teams/${team2.id}/pipelines`).set(auth(maintainer.token)).send({ pipeline_id: theirs.id, access_level: 'read_only' }).expect(201);
    // A pipeline they cannot see is as unknown as a missing one.
    expect((await api().post(`${base}/teams/${team2.id}/pipelines`).set(auth(maintainer.token)).send({ pipeline_id: other.id })).status).toBe(422);
  });

  it('enforces members_can_create_pipelines for members, not maintainers', async () => {
    const team = await createTeam({ name: `NoCreate ${Date.now()}`, members_can_create_pipelines: false });
    const member = await memberWithToken();
    const maintainer = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: member.user.id }).expect(201);
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: maintainer.user.id, role: 'maintainer' }).expect(201);
    const body = (name: string) => ({ name, repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: x\n', teams: [team.id] });
    const refused = await api()
      .post(`${base}/pipelines`)
      .set(auth(member.token))
      .send(body(`M ${Date.now()}`))
      .expect(422);
    expect(refused.body.errors[0].field).toBe('teams[0]');
    await api()
      .post(`${base}/pipelines`)
      .set(auth(maintainer.token))
      .send(body(`T ${Date.now()}`))
      .expect(201);
    await api().patch(`${base}/teams/${team.id}`).set(auth(adminToken)).send({ members_can_create_pipelines: true }).expect(200);
    await api()
      .post(`${base}/pipelines`)
      .set(auth(member.token))
      .send(body(`M2 ${Date.now()}`))
      .expect(201);
  });

  it('grants suites read or edit, and the suite enforces it', async () => {
    const team = await createTeam({ name: `Testers ${Date.now()}` });
    const qa = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: qa.user.id }).expect(201);
    const suite = await givenSuite(ctx(), org, adminToken);
    const suitePath = `/v2/analytics/organizations/${org.slug}/suites/${suite.slug}`;
    const grants = `${base}/teams/${team.id}/suites`;
    expect((await api().get(suitePath).set(auth(qa.token))).status).toBe(404);

    const granted = await api()
      .post(grants)
      .set(auth(adminToken))
      .send({ suite_id: suite.id, access_level: 'read' }) // one permission alone, as the docs' table writes it
      .expect(201);
    expectConforms(granted.body, [createTeamSuiteSample], responseSchema('createTeamSuite', '201'));
    expect(granted.body).toMatchObject({ access_level: ['read'], suite_id: suite.id, suite_url: `http://windsock.test${suitePath}` });
    expectConforms((await api().get(grants).set(auth(qa.token)).expect(200)).body, [listTeamSuitesSample], responseSchema('listTeamSuites'));
    expectConforms((await api().get(`${grants}/${suite.id}`).set(auth(qa.token)).expect(200)).body, [getTeamSuiteSample], responseSchema('getTeamSuite'));

    await api().get(suitePath).set(auth(qa.token)).expect(200);
    expect((await api().patch(suitePath).set(auth(qa.token)).send({ application_name: 'x' })).status).toBe(403);
    expect((await api().delete(suitePath).set(auth(qa.token))).status).toBe(403);

    const edit = await api()
      .patch(`${grants}/${suite.id}`)
      .set(auth(adminToken))
      .send({ access_level: ['edit', 'read'] })
      .expect(200);
    expectConforms(edit.body, [updateTeamSuiteSample], responseSchema('updateTeamSuite'));
    expect(edit.body.access_level).toEqual(['read', 'edit']);
    await api().patch(suitePath).set(auth(qa.token)).send({ application_name: 'by the team' }).expect(200);
    // The docs' table gives access_level as "`read` or `edit`": one permission alone is taken as a list of it.
    const single = await api().patch(`${grants}/${suite.id}`).set(auth(adminToken)).send({ access_level: 'read' }).expect(200);
    expect(single.body.access_level).toEqual(['read']);
    await api().patch(`${grants}/${suite.id}`).set(auth(adminToken)).send({ access_level: 'edit' }).expect(200);

    await api().delete(`${grants}/${suite.id}`).set(auth(adminToken)).expect(204);
    expect((await api().get(suitePath).set(auth(qa.token))).status).toBe(404);
    expect(
      (
        await api()
          .post(grants)
          .set(auth(adminToken))
          .send({ suite_id: suite.id, access_level: ['write'] })
      ).status,
    ).toBe(422);
  });

  it('deleting a team takes its grants and memberships with it', async () => {
    const team = await createTeam({ name: `Doomed ${Date.now()}` });
    const dev = await memberWithToken();
    await api().post(`${base}/teams/${team.id}/members`).set(auth(adminToken)).send({ user_id: dev.user.id }).expect(201);
    const p = await givenPipeline(ctx(), org, adminToken);
    const s = await givenSuite(ctx(), org, adminToken);
    await api().post(`${base}/teams/${team.id}/pipelines`).set(auth(adminToken)).send({ pipeline_id: p.id, access_level: 'read_only' }).expect(201);
    await api()
      .post(`${base}/teams/${team.id}/suites`)
      .set(auth(adminToken))
      .send({ suite_id: s.id, access_level: ['read'] })
      .expect(201);
    await api().get(`${base}/pipelines/${p.slug}`).set(auth(dev.token)).expect(200);
    await api().delete(`${base}/teams/${team.id}`).set(auth(adminToken)).expect(204);
    expect((await api().get(`${base}/pipelines/${p.slug}`).set(auth(dev.token))).status).toBe(404);
    expect((await api().get(`/v2/analytics/organizations/${org.slug}/suites/${s.slug}`).set(auth(dev.token))).status).toBe(404);
    for (const table of ['team_members', 'pipeline_teams', 'suite_teams']) {
      expect(await ctx().services.db(table).where({ team_id: team.id })).toEqual([]);
    }
  });
});

describeEachDatabase('organization members', (ctx) => {
  it('lists, gets, updates and removes members as the documentation shows', async () => {
    const { org, user: admin, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const base = `/v2/organizations/${org.slug}/members`;
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const team = await ctx().givenTeam(org, [member]);

    const list = await ctx().http().get(base).set(auth(token)).expect(200);
    expectConforms(list.body, [listOrgMembersSample], responseSchema('listOrganizationMembers'));
    expect(list.body.map((m: { id: string }) => m.id).sort()).toEqual([admin.id, member.id].sort());
    const got = await ctx().http().get(`${base}/${member.id}`).set(auth(token)).expect(200);
    expectConforms(got.body, [getOrgMemberSample], responseSchema('getOrganizationMember'));
    expect(got.body).toEqual({ id: member.id, name: member.name, email: member.email, role: 'member', sso_mode: 'optional' });
    // sso_mode: admins, and one's own membership only.
    expect((await ctx().http().get(`${base}/${admin.id}`).set(auth(memberToken)).expect(200)).body).not.toHaveProperty('sso_mode');
    expect((await ctx().http().get(`${base}/${member.id}`).set(auth(memberToken)).expect(200)).body.sso_mode).toBe('optional');

    // Only admins update, never their own membership, and with something to change.
    expect((await ctx().http().patch(`${base}/${admin.id}`).set(auth(memberToken)).send({ role: 'member' })).status).toBe(403);
    expect((await ctx().http().patch(`${base}/${admin.id}`).set(auth(token)).send({ role: 'member' })).status).toBe(403);
    expect((await ctx().http().patch(`${base}/${member.id}`).set(auth(token)).send({})).status).toBe(422);
    const updated = await ctx().http().patch(`${base}/${member.id}`).set(auth(token)).send({ role: 'admin', sso_mode: 'required' }).expect(200);
    expectConforms(updated.body, [updateOrgMemberSample], responseSchema('updateOrganizationMember'));
    expect(updated.body).toMatchObject({ role: 'admin', sso_mode: 'required' });
    await ctx().http().patch(`${base}/${member.id}`).set(auth(token)).send({ role: 'member' }).expect(200);

    // Removing a member takes them out of the organization's teams; the last admin stays.
    expect((await ctx().http().delete(`${base}/${member.id}`).set(auth(memberToken))).status).toBe(403);
    await ctx().http().delete(`${base}/${member.id}`).set(auth(token)).expect(204);
    await ctx().http().get(`${base}/${member.id}`).set(auth(token)).expect(404);
    expect(await ctx().services.db('team_members').where({ team_id: team.id })).toEqual([]);
    expect((await ctx().http().delete(`${base}/${admin.id}`).set(auth(token))).status).toBe(422);
    expect((await ctx().http().get(`${base}/not-a-uuid`).set(auth(token))).status).toBe(404);
  });
});
