/**
 * `windsock user create` accepts the new user's pending invitations in its own transaction
 * (issue 30): the user joins each inviting organization with the invitation's role and teams, and
 * the acceptance is in the organization's audit log.
 */
import { PassThrough } from 'node:stream';
import { withServices, type Cli } from '../../src/cli/context';
import { describeEachDatabase } from '../support/context';
import { run, withStore } from './support';

const quiet = (): Cli => ({ out: new PassThrough(), err: new PassThrough() });

describeEachDatabase('windsock user create and invitations', null, (_get, kind) => {
  withStore(kind, 'windsock-cli-invitations-');

  it("accepts the user's pending invitations: membership, role and teams, recorded", async () => {
    expect((await run('org', 'create', '--name', 'Acme', '--slug', 'acme')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Ann', '--email', 'ann@example.com', '--org', 'acme', '--role', 'admin')).code).toBe(0);
    const made = await withServices(quiet(), async (s) => {
      const org = (await s.orgs.findBySlug('acme'))!;
      const ann = (await s.users.findByEmail('ann@example.com'))!;
      const team = await s.orgs.createTeam({ organizationId: org.id, slug: 'backend', name: 'Backend' });
      const actor = { principal: { user: ann } as never, organization: org, role: 'admin' as const };
      const [inv] = await s.invitations.create(actor, { emails: ['Bob@Example.com'], role: 'admin', teams: [{ id: team.id, role: 'maintainer' }] });
      return { org, team, inv: inv! };
    });

    const created = await run('user', 'create', '--name', 'Bob', '--email', 'bob@example.com');
    expect(created.code).toBe(0);
    expect(created.text).toMatch(/^created user bob@example\.com \([0-9a-f-]{36}\)\naccepted invitations to acme\n$/);

    await withServices(quiet(), async (s) => {
      const bob = (await s.users.findByEmail('bob@example.com'))!;
      expect((await s.orgs.membershipsOf(bob.id)).get(made.org.id)).toBe('admin');
      expect((await s.orgs.teamRolesOf(bob.id, made.org.id)).get(made.team.id)).toBe('maintainer');
      const ann = (await s.users.findByEmail('ann@example.com'))!;
      const actor = { principal: { user: ann } as never, organization: made.org, role: 'admin' as const };
      expect(await s.invitations.get(actor, made.inv.id)).toMatchObject({ state: 'accepted', acceptedBy: { id: bob.id } });
      const { items } = await s.audit.list(actor, { limit: 10 });
      expect(items[0]).toMatchObject({ type: 'OrganizationInvitationAcceptedEvent', actor: { id: bob.id }, context: { type: 'SignUpContext' } });
    });
    // A user with no invitation is told nothing more.
    expect((await run('user', 'create', '--name', 'Cy', '--email', 'cy@example.com')).text).toMatch(/^created user cy@example\.com \([0-9a-f-]{36}\)\n$/);
  });
});
