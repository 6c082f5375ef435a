/**
 * A block or input step's `allowed_teams` (the docs' block step "Permissions"): only members of
 * the teams it names (by slug or id) may unblock it; it replaces the pipeline's write access, so a
 * writer who is in none of them is refused (403, saying why), and the build page offers the
 * unblock form to the members only.
 */
import { auth, describeEachDatabase } from '../../support/context';
import { codesOf, yaml } from '../../support/configuration';
import { parseConfiguration } from '../../../src/pipelines/configuration';
import { givenBuild, givenPipeline } from '../../support/given';
import { HTML, signedIn } from '../../web/support';

describe('allowed_teams in a configuration', () => {
  it('keeps a list (or one team) on block and input steps, and refuses what is not team names', () => {
    const steps = parseConfiguration(
      yaml(
        'steps:',
        '  - block: Release',
        '    allowed_teams: [approvers, deployers]',
        '  - input: Details',
        '    allowed_teams: approvers',
        '  - block: Open',
      ),
    ).steps;
    expect(steps.map((s) => (s.type === 'manual' ? s.allowed_teams : null))).toEqual([['approvers', 'deployers'], ['approvers'], undefined]);
    expect(codesOf(yaml('steps:', '  - block: Release', '    allowed_teams: [approvers, {x: 1}]', '  - command: make', '    allowed_teams: [x]'))).toEqual([
      'step 1 (line 3): "allowed_teams" must be a list of team slugs or ids, such as ["deployers"]',
      'step 2 (line 5): "allowed_teams" is not an attribute of a command step',
    ]);
  });
});

describeEachDatabase('allowed_teams', (ctx) => {
  it('lets members of the allowed teams unblock, by slug or id, and refuses anyone else, an admin too', async () => {
    const { org, token: adminToken } = await ctx().givenAdmin();
    const approver = await ctx().givenUser(org, 'member');
    const approverToken = await ctx().givenToken(approver, [org]);
    const team = await ctx().givenTeam(org, [approver]);
    const configuration = yaml(
      'steps:',
      '  - block: Release',
      `    allowed_teams: ["${team.slug}"]`,
      '  - input: Details',
      `    allowed_teams: ["${team.id}"]`,
      '  - command: deploy.sh',
    );
    const pipeline = await givenPipeline(ctx(), org, adminToken, configuration);
    expect(pipeline.steps.slice(0, 2).map((s) => s.allowed_teams)).toEqual([[team.slug], [team.id]]);
    const build = await givenBuild(ctx(), org, pipeline.slug, adminToken);
    const [release, details] = build.jobs;
    const unblock = (jobId: string, token: string) =>
      ctx().http().put(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}/jobs/${jobId}/unblock`).set(auth(token)).send({});

    const refused = await unblock(release!.id, adminToken);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(`Only members of the teams allowed to unblock this step (${team.slug}) may unblock it.`);

    // The build page offers the form to the team's member, not to the admin.
    const page = async (token: string) =>
      (await (await signedIn(ctx().app, token)).get(`/${org.slug}/${pipeline.slug}/builds/${build.number}`).set(HTML).expect(200)).text;
    const form = `/jobs/${release!.id}/unblock`;
    expect(await page(approverToken)).toContain(form);
    expect(await page(adminToken)).not.toContain(form);

    expect((await unblock(release!.id, approverToken)).status).toBe(200);
    expect((await unblock(details!.id, adminToken)).status).toBe(403);
    const done = await unblock(details!.id, approverToken);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: details!.id, state: 'unblocked', unblocked_by: { id: approver.id } });
  });
});
