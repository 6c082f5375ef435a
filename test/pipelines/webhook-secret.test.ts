/**
 * A pipeline's webhook secret (a Windsock extension): read and rotated by who may edit the
 * pipeline with a `write_pipelines` token; generation 0 is the secret pipelines always had; after
 * a rotation deliveries signed with the old secret are refused and the new one admits them.
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { branchPush, deliverGitHub, givenTarget, signatureOf, type Target } from '../incoming-webhooks/helpers';

const secretPath = (t: { org: { slug: string }; pipeline: { slug: string } }) => `/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/webhook-secret`;

function deliverGitLab(ctx: TestContext, t: Target, token: string) {
  const push = { object_kind: 'push', ref: 'refs/heads/main', after: 'a'.repeat(40), checkout_sha: 'a'.repeat(40), commits: [], user_name: 'J' };
  return ctx.http().post(t.path).set('X-Gitlab-Event', 'Push Hook').set('X-Gitlab-Token', token).send(push);
}

function deliverBitbucket(ctx: TestContext, t: Target, secret: string) {
  const body = JSON.stringify({ push: { changes: [] } });
  return ctx
    .http()
    .post(t.path)
    .set('Content-Type', 'application/json')
    .set('X-Event-Key', 'repo:push')
    .set('X-Hub-Signature', signatureOf(secret, body))
    .send(body);
}

describeEachDatabase('pipeline webhook secret', (ctx) => {
  it('reads the secret deliveries are checked with: generation 0 is the one every pipeline had before rotation existed', async () => {
    const t = await givenTarget(ctx());
    const res = await ctx().http().get(secretPath(t)).set(auth(t.token)).expect(200);
    expect(res.body).toEqual({ secret: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // Exactly the value derived before the generation column existed.
    expect(res.body.secret).toBe(ctx().services.keys.derive('pipeline-webhook-secret', t.pipeline.id, 64));
    expect(res.body.secret).toBe(t.secret);
    await deliverGitHub(ctx(), t, 'push', branchPush()).expect(201);
  });

  it('rotates it: the old secret is refused with 401 (GitHub signature), the new one builds, the webhook URL stays', async () => {
    const t = await givenTarget(ctx());
    const rotated = await ctx()
      .http()
      .post(`${secretPath(t)}/rotate`)
      .set(auth(t.token))
      .expect(200);
    const secret = rotated.body.secret as string;
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(secret).not.toBe(t.secret);
    expect((await ctx().http().get(secretPath(t)).set(auth(t.token)).expect(200)).body).toEqual({ secret });

    const old = await deliverGitHub(ctx(), t, 'push', branchPush()).expect(401);
    expect(old.body).toEqual({ message: "X-Hub-Signature-256 does not match the payload signed with this pipeline's webhook secret." });
    await deliverGitHub(ctx(), { ...t, secret }, 'push', branchPush()).expect(201);

    const again = (
      await ctx()
        .http()
        .post(`${secretPath(t)}/rotate`)
        .set(auth(t.token))
        .expect(200)
    ).body.secret as string;
    expect(new Set([t.secret, secret, again]).size).toBe(3);
    await deliverGitHub(ctx(), { ...t, secret }, 'push', branchPush()).expect(401);
    await deliverGitHub(ctx(), { ...t, secret: again }, 'push', branchPush()).expect(201);

    const pipeline = await ctx().http().get(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}`).set(auth(t.token)).expect(200);
    expect(pipeline.body.provider.webhook_url).toBe(t.pipeline.provider.webhook_url);
  });

  it('checks GitLab X-Gitlab-Token and Bitbucket X-Hub-Signature against the rotated secret', async () => {
    const gitlab = await givenTarget(ctx(), {}, { repository: 'https://gitlab.com/acme/app.git' });
    const gitlabSecret = (
      await ctx()
        .http()
        .post(`${secretPath(gitlab)}/rotate`)
        .set(auth(gitlab.token))
        .expect(200)
    ).body.secret as string;
    expect((await deliverGitLab(ctx(), gitlab, gitlab.secret).expect(401)).body).toEqual({
      message: "X-Gitlab-Token does not match this pipeline's webhook secret.",
    });
    expect((await deliverGitLab(ctx(), gitlab, gitlabSecret)).status).not.toBe(401);

    const bitbucket = await givenTarget(ctx(), {}, { repository: 'git@bitbucket.org:acme/app.git' });
    const bitbucketSecret = (
      await ctx()
        .http()
        .post(`${secretPath(bitbucket)}/rotate`)
        .set(auth(bitbucket.token))
        .expect(200)
    ).body.secret as string;
    await deliverBitbucket(ctx(), bitbucket, bitbucket.secret).expect(401);
    expect((await deliverBitbucket(ctx(), bitbucket, bitbucketSecret)).status).not.toBe(401);
  });

  it('can rotate an archived pipeline\u2019s secret (a leaked secret must always be replaceable)', async () => {
    const t = await givenTarget(ctx());
    await ctx().http().post(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/archive`).set(auth(t.token)).expect(200);
    const res = await ctx()
      .http()
      .post(`${secretPath(t)}/rotate`)
      .set(auth(t.token))
      .expect(200);
    expect(res.body.secret).not.toBe(t.secret);
  });

  it('is only for a write_pipelines token whose user may edit the pipeline: 403 for those who may see it, 404 for those who may not', async () => {
    const org = await ctx().givenOrg({ teamsEnabled: true });
    const admin = await ctx().givenUser(org, 'admin');
    const manager = await ctx().givenUser(org, 'member');
    const builder = await ctx().givenUser(org, 'member');
    const outsider = await ctx().givenUser(org, 'member');
    const managers = await ctx().givenTeam(org, [manager]);
    const builders = await ctx().givenTeam(org, [builder]);
    const adminToken = await ctx().givenToken(admin, [org]);
    const created = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(adminToken))
      .send({
        name: 'Secret keeper',
        repository: 'git@github.com:acme/app.git',
        configuration: 'steps:\n  - command: make\n',
        teams: [
          { id: managers.id, access_level: 'manage_build_and_read' },
          { id: builders.id, access_level: 'build_and_read' },
        ],
      })
      .expect(201);
    const t = { org, pipeline: created.body as { slug: string } };
    const paths = [
      ['get', secretPath(t)],
      ['post', `${secretPath(t)}/rotate`],
    ] as const;

    for (const [method, path] of paths) {
      await ctx().http()[method](path).set(auth(adminToken)).expect(200);
      await ctx()
        .http()
        [method](path)
        .set(auth(await ctx().givenToken(manager, [org])))
        .expect(200);
      const forbidden = await ctx()
        .http()
        [method](path)
        .set(auth(await ctx().givenToken(builder, [org])))
        .expect(403);
      expect(forbidden.body).toEqual({ message: 'Forbidden' });
      await ctx()
        .http()
        [method](path)
        .set(auth(await ctx().givenToken(outsider, [org])))
        .expect(404);
      // Without write_pipelines, even an administrator's token may not (the scope is checked first).
      const readOnly = await ctx()
        .http()
        [method](path)
        .set(auth(await ctx().givenToken(admin, [org], ['read_pipelines'])))
        .expect(403);
      expect(readOnly.body.message).toMatch(/write_pipelines/);
      await ctx().http()[method](path).expect(401);
    }
    await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/nope/webhook-secret`).set(auth(adminToken)).expect(404);
  });
});
