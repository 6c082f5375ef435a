/**
 * Organization administration (issue 30): API settings (the IP allow-list enforced on every
 * request to the organization's paths), turning teams on, the audit log (written in the
 * transaction of each admin action, never holding a secret) and invitations (a batch checked
 * whole, revoked, accepted when the invited email signs up).
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { fakeDateOnly, moveDateOn, PAST_CACHE_WINDOW_MS } from '../support/date';
import { signedIn } from '../web/support';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function events(ctx: TestContext, slug: string, token: string) {
  const res = await ctx.http().get(`/v2/organizations/${slug}/audit_events`).set(auth(token)).expect(200);
  return res.body.items as {
    uuid: string;
    type: string;
    actor: { uuid: string } | null;
    subject: { type: string; uuid: string; name: string };
    data: Record<string, unknown>;
  }[];
}

describeEachDatabase('organization administration', (ctx) => {
  describe('API settings', () => {
    it('are read and changed by administrators, field by field, and recorded in the audit log', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const url = `/v2/organizations/${org.slug}/api-settings`;
      const initial = await ctx().http().get(url).set(auth(token)).expect(200);
      expect(initial.body).toEqual({
        url: `http://windsock.test${url}`,
        allowed_ip_addresses: null,
        revoke_inactive_tokens_after_days: null,
        restrict_user_api_token_creation: false,
        features: { api_ip_allow_list: true, inactive_api_token_revocation: true },
      });
      const changed = await ctx()
        .http()
        .patch(url)
        .set(auth(token))
        .send({ allowed_ip_addresses: ' 127.0.0.0/8   ::1/128 ::ffff:127.0.0.0/104 ', revoke_inactive_tokens_after_days: 90 })
        .expect(200);
      expect(changed.body).toMatchObject({
        allowed_ip_addresses: '127.0.0.0/8 ::1/128 ::ffff:127.0.0.0/104',
        revoke_inactive_tokens_after_days: 90,
        restrict_user_api_token_creation: false,
      });
      // Only what is sent changes.
      const again = await ctx().http().patch(url).set(auth(token)).send({ restrict_user_api_token_creation: true }).expect(200);
      expect(again.body).toMatchObject({
        allowed_ip_addresses: '127.0.0.0/8 ::1/128 ::ffff:127.0.0.0/104',
        revoke_inactive_tokens_after_days: 90,
        restrict_user_api_token_creation: true,
      });
      expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toEqual(again.body);
      const cleared = await ctx().http().patch(url).set(auth(token)).send({ allowed_ip_addresses: null, revoke_inactive_tokens_after_days: null }).expect(200);
      expect(cleared.body).toMatchObject({ allowed_ip_addresses: null, revoke_inactive_tokens_after_days: null });

      const logged = (await events(ctx(), org.slug, token)).filter((e) => e.type === 'OrganizationApiSettingsUpdatedEvent');
      expect(logged.map((e) => e.data)).toEqual([
        { allowed_ip_addresses: null, revoke_inactive_tokens_after_days: null },
        { restrict_user_api_token_creation: true },
        { allowed_ip_addresses: '127.0.0.0/8 ::1/128 ::ffff:127.0.0.0/104', revoke_inactive_tokens_after_days: 90 },
      ]);
      expect(logged[0]).toMatchObject({
        actor: { type: 'User', uuid: user.id, name: user.name },
        subject: { type: 'Organization', uuid: org.id, name: org.name },
      });
    });

    it('refuse wrong values with a 422 naming each field, changing nothing', async () => {
      const { org, token } = await ctx().givenAdmin();
      const url = `/v2/organizations/${org.slug}/api-settings`;
      const res = await ctx()
        .http()
        .patch(url)
        .set(auth(token))
        .send({ allowed_ip_addresses: '10.0.0.0/8 not-a-range', revoke_inactive_tokens_after_days: 45, restrict_user_api_token_creation: true })
        .expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['allowed_ip_addresses', 'revoke_inactive_tokens_after_days']);
      expect(res.body.message).toBe('Validation Failed');
      const bad = await ctx().http().patch(url).set(auth(token)).send({ restrict_user_api_token_creation: 'yes' });
      expect(bad.status).toBeGreaterThanOrEqual(400);
      expect(bad.status).toBeLessThan(500);
      expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toMatchObject({
        allowed_ip_addresses: null,
        restrict_user_api_token_creation: false,
      });
      expect(await events(ctx(), org.slug, token)).toEqual([]);
    });

    it('are for administrators only', async () => {
      const { org } = await ctx().givenAdmin();
      const member = await ctx().givenUser(org, 'member');
      const token = await ctx().givenToken(member, [org]);
      const url = `/v2/organizations/${org.slug}/api-settings`;
      expect((await ctx().http().get(url).set(auth(token)).expect(403)).body).toEqual({ message: 'Forbidden' });
      await ctx().http().patch(url).set(auth(token)).send({ allowed_ip_addresses: '10.0.0.0/8' }).expect(403);
      const noScope = await ctx().givenToken(member, [org], ['read_organizations']);
      expect((await ctx().http().get(url).set(auth(noScope)).expect(403)).body.message).toMatch(/read_organization_settings/);
    });

    it("enforce the IP allow-list on every request to the organization's paths, from the next request on", async () => {
      const { org, token } = await ctx().givenAdmin();
      const other = await ctx().givenOrg();
      const admin2 = await ctx().givenUser(other, 'admin');
      await ctx().services.orgs.addMember(org.id, admin2.id, 'member');
      const both = await ctx().givenToken(admin2, [org, other]);
      const base = `/v2/organizations/${org.slug}`;
      // The test's requests come from the loopback address: a list holding it changes nothing.
      await ctx().http().patch(`${base}/api-settings`).set(auth(token)).send({ allowed_ip_addresses: '127.0.0.0/8 ::1/128' }).expect(200);
      await ctx().http().get(`${base}/pipelines`).set(auth(token)).expect(200);
      // One without it locks every token out of this organization at once (the docs' self-lockout).
      await ctx().http().patch(`${base}/api-settings`).set(auth(token)).send({ allowed_ip_addresses: '10.0.0.0/8' }).expect(200);
      for (const path of [`${base}`, `${base}/pipelines`, `${base}/api-settings`, `${base}/audit_events`]) {
        const res = await ctx().http().get(path).set(auth(token)).expect(403);
        expect(res.body.message).toMatch(/IP address \(.*127\.0\.0\.1\) isn't allowed to access this organization's API/);
      }
      await ctx().http().get(`${base}/pipelines`).set(auth(both)).expect(403);
      // Another organization of the same token, and paths outside organizations, are not affected.
      await ctx().http().get(`/v2/organizations/${other.slug}/pipelines`).set(auth(both)).expect(200);
      await ctx().http().get('/v2/user').set(auth(token)).expect(200);
      // The operator lifts it (nothing over HTTP can; the CLI is another process): the list is
      // cached for 1 s of real time per process, so the request after that window is let through.
      // The process's Date moves 1.1 s on (running on from there) instead of the test waiting.
      await ctx().services.orgs.updateApiSettings(org.id, { allowedIpAddresses: null });
      await ctx().http().get(`${base}/pipelines`).set(auth(token)).expect(403);
      moveDateOn(PAST_CACHE_WINDOW_MS);
      try {
        await ctx().http().get(`${base}/pipelines`).set(auth(token)).expect(200);
      } finally {
        jest.useRealTimers();
      }
    });

    it('read the IP allow-list once per second per organization, not on every request', async () => {
      const { org, token } = await ctx().givenAdmin();
      const base = `/v2/organizations/${org.slug}`;
      await ctx().http().patch(`${base}/api-settings`).set(auth(token)).send({ allowed_ip_addresses: '127.0.0.0/8 ::1/128' }).expect(200);
      const reads: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (q.sql.includes('allowed_ip_addresses')) reads.push(q.sql);
      };
      ctx().services.db.on('query', onQuery);
      try {
        // The Date stands still: every request is within the window of the first.
        fakeDateOnly({ standingStill: true });
        try {
          for (let i = 0; i < 3; i++) await ctx().http().get(`${base}/pipelines`).set(auth(token)).expect(200);
          expect(reads).toHaveLength(1);
          jest.setSystemTime(Date.now() + PAST_CACHE_WINDOW_MS);
          await ctx().http().get(`${base}/pipelines`).set(auth(token)).expect(200);
          expect(reads).toHaveLength(2);
        } finally {
          jest.useRealTimers();
        }
      } finally {
        ctx().services.db.off('query', onQuery);
      }
    });
  });

  describe('teams/enable', () => {
    it('turns teams on for administrators, recorded once, with an Everyone team when there is none (204)', async () => {
      const { org, user, token } = await ctx().givenAdmin({ teamsEnabled: false });
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      const base = `/v2/organizations/${org.slug}`;
      const p = await ctx()
        .http()
        .post(`${base}/pipelines`)
        .set(auth(token))
        .send({ name: 'Teamless', repository: 'git@github.com:acme/x.git', configuration: 'steps:\n  - command: x\n' })
        .expect(201);
      expect((await ctx().http().get(`${base}/pipelines`).set(auth(memberToken)).expect(200)).body.map((x: { slug: string }) => x.slug)).toEqual([p.body.slug]);
      const suite = await ctx().http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Before teams' }).expect(201);
      await ctx().http().post(`${base}/teams/enable`).set(auth(memberToken)).expect(403);

      // teams.md: 204, and "If the organization has no existing teams, enabling teams creates a default "Everyone" team containing all organization members".
      const res = await ctx().http().post(`${base}/teams/enable`).set(auth(token)).expect(204);
      expect(res.text).toBe('');
      await ctx().http().post(`${base}/teams/enable`).set(auth(token)).expect(204);
      expect((await ctx().services.orgs.findById(org.id))!.teamsEnabled).toBe(true);
      const logged = (await events(ctx(), org.slug, token)).filter((e) => e.type === 'OrganizationTeamsEnabledEvent');
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ actor: { uuid: user.id }, subject: { type: 'Organization', uuid: org.id } });
      const teams = (await ctx().http().get(`${base}/teams`).set(auth(token)).expect(200)).body as {
        id: string;
        slug: string;
        name: string;
        default: boolean;
      }[];
      expect(teams.map((t) => [t.slug, t.name, t.default])).toEqual([['everyone', 'Everyone', true]]);
      const members = (await ctx().http().get(`${base}/teams/${teams[0]!.id}/members`).set(auth(token)).expect(200)).body as { user_id: string }[];
      expect(members.map((m) => m.user_id).sort()).toEqual([user.id, member.id].sort());
      const granted = (await ctx().http().get(`${base}/teams/${teams[0]!.id}/pipelines`).set(auth(token)).expect(200)).body as {
        pipeline_id: string;
        access_level: string;
      }[];
      expect(granted.map((g) => [g.pipeline_id, g.access_level])).toEqual([[p.body.id, 'manage_build_and_read']]);
      const suites = (await ctx().http().get(`${base}/teams/${teams[0]!.id}/suites`).set(auth(token)).expect(200)).body as {
        suite_id: string;
        access_level: string[];
      }[];
      expect(suites.map((g) => [g.suite_id, g.access_level])).toEqual([[suite.body.id, ['read', 'edit']]]);
      // A fresh token (the principal cache holds the organization for a second) still reaches the pipeline, through Everyone.
      const fresh = await ctx().givenToken(member, [org]);
      expect((await ctx().http().get(`${base}/pipelines`).set(auth(fresh)).expect(200)).body.map((x: { slug: string }) => x.slug)).toEqual([p.body.slug]);
    });

    it('makes no Everyone team where a team exists: members then reach only what their teams were given', async () => {
      const { org, token } = await ctx().givenAdmin({ teamsEnabled: false });
      const member = await ctx().givenUser(org, 'member');
      await ctx().givenTeam(org, []);
      const base = `/v2/organizations/${org.slug}`;
      await ctx()
        .http()
        .post(`${base}/pipelines`)
        .set(auth(token))
        .send({ name: 'Teamless', repository: 'git@github.com:acme/x.git', configuration: 'steps:\n  - command: x\n' })
        .expect(201);
      await ctx().http().post(`${base}/teams/enable`).set(auth(token)).expect(204);
      expect(((await ctx().http().get(`${base}/teams`).set(auth(token)).expect(200)).body as { slug: string }[]).map((t) => t.slug)).not.toContain('everyone');
      const fresh = await ctx().givenToken(member, [org]);
      expect((await ctx().http().get(`${base}/pipelines`).set(auth(fresh)).expect(200)).body).toEqual([]);
    });
  });

  describe('audit events', () => {
    it('are listed newest first and read one by one, with the documented fields; administrators only, 404 across organizations', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const base = `/v2/organizations/${org.slug}`;
      const team = await ctx().http().post(`${base}/teams`).set(auth(token)).send({ name: 'Audited', privacy: 'visible' }).expect(201);
      await ctx().http().patch(`${base}/api-settings`).set(auth(token)).send({ restrict_user_api_token_creation: true }).expect(200);
      const list = await ctx().http().get(`${base}/audit_events?per_page=1`).set(auth(token)).expect(200);
      expect(list.body.items).toHaveLength(1);
      // By cursor, as the docs' audit events page has it: links.next, also in the Link header.
      expect(list.headers.link).toBe(`<${list.body.links.next}>; rel="next"`);
      const [newest] = list.body.items;
      expect(list.body.links.prev).toBeUndefined();
      const second = await ctx().http().get(String(list.body.links.next).slice('http://windsock.test'.length)).set(auth(token)).expect(200);
      expect(second.body.items.map((e: { type: string }) => e.type)).toEqual(['TeamCreatedEvent']);
      expect(second.body.links.next).toBeUndefined();
      // The docs' `first` and `prev` links, in the Link header too, lead back.
      expect(second.body.links.first).toBe(`http://windsock.test${base}/audit_events?per_page=1`);
      expect(second.headers.link).toBe(`<${second.body.links.first}>; rel="first", <${second.body.links.prev}>; rel="prev"`);
      const previous = await ctx().http().get(String(second.body.links.prev).slice('http://windsock.test'.length)).set(auth(token)).expect(200);
      expect(previous.body.items).toEqual([newest]);
      // Read back with `before`: the page before it is the first, so it has no `prev`, and `next` leads on.
      expect(previous.body.links.prev).toBeUndefined();
      expect(previous.body.links.next).toBe(list.body.links.next);
      const cursor = new URL(list.body.links.next).searchParams.get('after')!;
      // Nothing is newer than the newest event.
      const back = await ctx().http().get(`${base}/audit_events?before=${cursor}`).set(auth(token)).expect(200);
      expect(back.body.items).toEqual([]);
      await ctx().http().get(`${base}/audit_events?after=${cursor}&before=${cursor}`).set(auth(token)).expect(400);
      await ctx().http().get(`${base}/audit_events?after=bm90LWEtY3Vyc29y`).set(auth(token)).expect(400);
      expect(newest.type).toBe('OrganizationApiSettingsUpdatedEvent');
      const all = await events(ctx(), org.slug, token);
      expect(all.map((e) => e.type)).toEqual(['OrganizationApiSettingsUpdatedEvent', 'TeamCreatedEvent']);
      expect(all[1]).toMatchObject({ subject: { type: 'Team', uuid: team.body.id, name: 'Audited' }, data: { name: 'Audited', privacy: 'visible' } });

      const one = await ctx().http().get(`${base}/audit_events/${newest.uuid}`).set(auth(token)).expect(200);
      expect(one.body).toEqual(newest);
      expect(Object.keys(one.body).sort()).toEqual(['actor', 'context', 'data', 'graphql_id', 'occurred_at', 'subject', 'type', 'url', 'uuid']);
      expect(one.body).toMatchObject({
        url: `http://windsock.test${base}/audit_events/${newest.uuid}`,
        actor: { type: 'User', uuid: user.id, name: user.name },
        context: { type: 'APIContext' },
      });
      expect(one.body.occurred_at).toMatch(ISO);
      expect(Buffer.from(one.body.graphql_id, 'base64').toString()).toBe(`AuditEvent---${newest.uuid}`);
      await ctx().http().get(`${base}/audit_events/${newest.uuid.toUpperCase()}`).set(auth(token)).expect(200);

      const elsewhere = await ctx().givenAdmin();
      await ctx().http().get(`/v2/organizations/${elsewhere.org.slug}/audit_events/${newest.uuid}`).set(auth(elsewhere.token)).expect(404);
      expect(await events(ctx(), elsewhere.org.slug, elsewhere.token)).toEqual([]);
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      await ctx().http().get(`${base}/audit_events`).set(auth(memberToken)).expect(403);
      await ctx().http().get(`${base}/audit_events/${newest.uuid}`).set(auth(memberToken)).expect(403);
    });

    it('record nothing for a change that fails, and never a secret', async () => {
      const { org, token } = await ctx().givenAdmin();
      const base = `/v2/organizations/${org.slug}`;
      await ctx().http().post(`${base}/teams`).set(auth(token)).send({ name: ' ' }).expect(422);
      expect(await events(ctx(), org.slug, token)).toEqual([]);
      // A rolled-back transaction takes its record with it.
      await expect(
        ctx().services.audit.transaction(
          { organization: org },
          async () => {
            throw new Error('change failed');
          },
          () => ({ type: 'NeverEvent', subject: { type: 'Organization', id: org.id, name: org.name } }),
        ),
      ).rejects.toThrow('change failed');
      expect(await events(ctx(), org.slug, token)).toEqual([]);
      // Secrets in what a service hands over are dropped at any depth.
      await ctx().services.db.transaction((trx) =>
        ctx().services.audit.record(
          trx,
          { organization: org },
          {
            type: 'SecretTestEvent',
            subject: { type: 'Organization', id: org.id, name: org.name },
            data: {
              description: 'kept',
              token: 'tok-123',
              nested: { webhook_secret: 's3cr3t', value: 'v4lue', settings: { url: 'https://hooks.slack.com/x' }, key: 'KEPT' },
            },
          },
        ),
      );
      const [recorded] = await events(ctx(), org.slug, token);
      expect(recorded).toMatchObject({ type: 'SecretTestEvent', actor: null, data: { description: 'kept', nested: { key: 'KEPT' } } });
      expect(JSON.stringify(recorded)).not.toMatch(/tok-123|s3cr3t|v4lue|hooks\.slack\.com/);
    });
  });

  describe('invitations', () => {
    it('are created in a batch (deduplicated), listed while pending, read, and revoked; each recorded', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const team = await ctx().givenTeam(org, []);
      const base = `/v2/organizations/${org.slug}/invitations`;
      const made = await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({
          emails: ['Ann@Example.com', 'ann@example.com', 'bob@example.com'],
          role: 'admin',
          sso_mode: 'optional',
          teams: [{ id: team.id, role: 'maintainer' }],
        })
        .expect(201);
      expect(made.body).toHaveLength(2);
      const [ann, bob] = made.body;
      expect(ann).toMatchObject({
        email: 'Ann@Example.com',
        state: 'pending',
        role: 'admin',
        sso_mode: 'optional',
        // The docs' team entry (id, graphql_id, slug), with the role offered.
        teams: [{ id: team.id, graphql_id: Buffer.from(`Team---${team.id}`).toString('base64'), slug: team.slug, role: 'maintainer' }],
        created_by: { id: user.id, name: user.name, email: user.email },
        url: `http://windsock.test${base}/${ann.id}`,
        accepted_at: null,
        accepted_by: null,
        revoked_at: null,
        revoked_by: null,
        expired_at: null,
      });
      expect(ann.created_at).toMatch(ISO);
      expect(Buffer.from(ann.graphql_id, 'base64').toString()).toBe(`OrganizationInvitation---${ann.id}`);
      // Defaults: member, SSO required, no teams.
      const plain = (
        await ctx()
          .http()
          .post(base)
          .set(auth(token))
          .send({ emails: ['cy@example.com'] })
          .expect(201)
      ).body[0];
      expect(plain).toMatchObject({ role: 'member', sso_mode: 'required', teams: [] });

      // Newest first, by cursor.
      const page1 = await ctx().http().get(`${base}?per_page=2`).set(auth(token)).expect(200);
      expect(page1.body.items).toHaveLength(2);
      expect(page1.body.items[0].id).toBe(plain.id);
      expect(page1.body.links.next).toMatch(/after=/);
      // The docs: the links are in the Link header too.
      expect(page1.headers.link).toBe(`<${page1.body.links.next}>; rel="next"`);
      const page2 = await ctx().http().get(page1.body.links.next.replace('http://windsock.test', '')).set(auth(token)).expect(200);
      expect(page2.body.items).toHaveLength(1);
      expect(page2.body.links.next).toBeUndefined();
      const seen = [...page1.body.items, ...page2.body.items].map((i: { id: string }) => i.id).sort();
      expect(seen).toEqual([ann.id, bob.id, plain.id].sort());
      await ctx().http().get(`${base}?after=nonsense`).set(auth(token)).expect(400);

      await ctx().http().delete(`${base}/${bob.id}`).set(auth(token)).expect(204);
      const revoked = await ctx().http().get(`${base}/${bob.id}`).set(auth(token)).expect(200);
      expect(revoked.body).toMatchObject({ state: 'revoked', revoked_by: { id: user.id } });
      expect(revoked.body.revoked_at).toMatch(ISO);
      expect((await ctx().http().delete(`${base}/${bob.id}`).set(auth(token)).expect(422)).body.message).toMatch(/revoked/);
      expect((await ctx().http().get(base).set(auth(token)).expect(200)).body.items.map((i: { id: string }) => i.id)).not.toContain(bob.id);
      // A team deleted since is no longer shown.
      await ctx().http().delete(`/v2/organizations/${org.slug}/teams/${team.id}`).set(auth(token)).expect(204);
      expect((await ctx().http().get(`${base}/${ann.id}`).set(auth(token)).expect(200)).body.teams).toEqual([]);

      const logged = await events(ctx(), org.slug, token);
      expect(
        logged
          .filter((e) => e.type === 'OrganizationInvitationCreatedEvent')
          .map((e) => e.subject.name)
          .sort(),
      ).toEqual(['Ann@Example.com', 'bob@example.com', 'cy@example.com']);
      expect(logged.filter((e) => e.type === 'OrganizationInvitationRevokedEvent').map((e) => e.subject.uuid)).toEqual([bob.id]);
    });

    it('refuse a batch with any bad entry, making none', async () => {
      const { org, token } = await ctx().givenAdmin();
      const member = await ctx().givenUser(org, 'member');
      const elsewhere = await ctx().givenOrg();
      const foreignTeam = await ctx().givenTeam(elsewhere, []);
      const base = `/v2/organizations/${org.slug}/invitations`;
      await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({ emails: ['pending@example.com'] })
        .expect(201);
      const res = await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({
          emails: ['fine@example.com', 'not an email', member.email.toUpperCase(), 'PENDING@example.com'],
          teams: [{ id: foreignTeam.id, role: 'member' }],
        })
        .expect(422);
      const codes = res.body.errors.map((e: { field: string; code: string }) => `${e.field}: ${e.code}`);
      expect(codes).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^emails: is not an email address/),
          expect.stringMatching(/^emails: is already a member/),
          expect.stringMatching(/^emails: already has a pending invitation/),
          expect.stringMatching(/^teams: is not a team of this organization/),
        ]),
      );
      expect((await ctx().http().get(base).set(auth(token)).expect(200)).body.items.map((i: { email: string }) => i.email)).toEqual(['pending@example.com']);
      const team = await ctx().givenTeam(org, []);
      const twice = await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({
          emails: ['x@example.com'],
          teams: [
            { id: team.id, role: 'member' },
            { id: team.id, role: 'maintainer' },
          ],
        })
        .expect(422);
      expect(twice.body.errors[0]).toMatchObject({ field: 'teams' });
      const none = await ctx().http().post(base).set(auth(token)).send({ emails: [] });
      expect(none.status).toBeGreaterThanOrEqual(400);
      expect(none.status).toBeLessThan(500);
    });

    it('are for administrators only, and 404 across organizations', async () => {
      const { org, token } = await ctx().givenAdmin();
      const base = `/v2/organizations/${org.slug}/invitations`;
      const [inv] = (
        await ctx()
          .http()
          .post(base)
          .set(auth(token))
          .send({ emails: ['d@example.com'] })
          .expect(201)
      ).body;
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      await ctx().http().get(base).set(auth(memberToken)).expect(403);
      await ctx()
        .http()
        .post(base)
        .set(auth(memberToken))
        .send({ emails: ['e@example.com'] })
        .expect(403);
      await ctx().http().get(`${base}/${inv.id}`).set(auth(memberToken)).expect(403);
      await ctx().http().delete(`${base}/${inv.id}`).set(auth(memberToken)).expect(403);
      const other = await ctx().givenAdmin();
      await ctx().http().get(`/v2/organizations/${other.org.slug}/invitations/${inv.id}`).set(auth(other.token)).expect(404);
      await ctx().http().delete(`/v2/organizations/${other.org.slug}/invitations/${inv.id}`).set(auth(other.token)).expect(404);
      await ctx().http().get(`${base}/${inv.id}`).set(auth(token)).expect(200);
    });

    it('are accepted when an existing user with the invited email signs in to the web interface', async () => {
      const { org, token } = await ctx().givenAdmin();
      const elsewhere = await ctx().givenOrg();
      const user = await ctx().givenUser(elsewhere, 'member');
      const base = `/v2/organizations/${org.slug}/invitations`;
      const [inv] = (
        await ctx()
          .http()
          .post(base)
          .set(auth(token))
          .send({ emails: [user.email.toUpperCase()] })
          .expect(201)
      ).body;
      expect((await ctx().services.orgs.membershipsOf(user.id)).has(org.id)).toBe(false);
      await signedIn(ctx().app, await ctx().givenToken(user, [elsewhere]));
      expect((await ctx().services.orgs.membershipsOf(user.id)).get(org.id)).toBe('member');
      expect((await ctx().http().get(`${base}/${inv.id}`).set(auth(token)).expect(200)).body).toMatchObject({
        state: 'accepted',
        accepted_by: { id: user.id },
      });
    });

    it('are accepted when a user with the invited email signs up: membership, role and teams, recorded', async () => {
      const { org, token } = await ctx().givenAdmin();
      const team = await ctx().givenTeam(org, []);
      const base = `/v2/organizations/${org.slug}/invitations`;
      const email = `Invited-${Date.now()}@Example.com`;
      const [inv] = (
        await ctx()
          .http()
          .post(base)
          .set(auth(token))
          .send({ emails: [email], role: 'admin', teams: [{ id: team.id, role: 'maintainer' }] })
          .expect(201)
      ).body;
      const s = ctx().services;
      const user = await s.db.transaction(async (trx) => {
        const created = await s.users.create({ name: 'Invited', email: email.toLowerCase() }, trx);
        expect(await s.invitations.acceptFor(created, trx)).toEqual([org.id]);
        return created;
      });
      expect((await s.orgs.membershipsOf(user.id)).get(org.id)).toBe('admin');
      expect((await s.orgs.teamRolesOf(user.id, org.id)).get(team.id)).toBe('maintainer');
      const got = await ctx().http().get(`${base}/${inv.id}`).set(auth(token)).expect(200);
      expect(got.body).toMatchObject({ state: 'accepted', accepted_by: { id: user.id, email: email.toLowerCase() } });
      expect(got.body.accepted_at).toMatch(ISO);
      expect((await ctx().http().get(base).set(auth(token)).expect(200)).body.items).toEqual([]);
      await ctx().http().delete(`${base}/${inv.id}`).set(auth(token)).expect(422);
      const [accepted] = await events(ctx(), org.slug, token);
      expect(accepted).toMatchObject({ type: 'OrganizationInvitationAcceptedEvent', actor: { uuid: user.id }, subject: { uuid: inv.id } });
      // The new member's own token reaches the organization as an admin.
      const userToken = await ctx().givenToken(user, [org]);
      await ctx().http().get(`/v2/organizations/${org.slug}/api-settings`).set(auth(userToken)).expect(200);
    });
  });
});
