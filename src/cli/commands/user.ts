/** `windsock user create|add-to-org|list`: users and their organization memberships. */
import { Option, type Command } from 'commander';
import { isUniqueViolation } from '../../db/knex';
import type { Role } from '../../core/identity';
import { CommandError, email, orgBySlug, print, printRows, text, userByEmail, withServices, type Cli } from '../context';

export const ORG_ROLES: Role[] = ['admin', 'member'];

function userExists(address: string, org: string | undefined): CommandError {
  return new CommandError(
    `a user with email "${address.toLowerCase()}" already exists; to make them a member of an organization: ` +
      `windsock user add-to-org --email ${address} --org ${org ?? 'SLUG'} --role admin|member`,
  );
}

export function userCommands(program: Command, cli: Cli): void {
  const user = program.command('user').description('users: create, add-to-org, list');

  user
    .command('create')
    .description('create a user, optionally as a member of an organization; their pending invitations are accepted')
    .requiredOption('--name <NAME>', 'their name', text)
    .requiredOption('--email <EMAIL>', 'their email (unique, case-insensitive)', email)
    .option('--org <SLUG>', 'make them a member of this organization')
    .addOption(new Option('--role <ROLE>', 'their role there').choices(ORG_ROLES).default('member'))
    .action(async (o: { name: string; email: string; org?: string; role: Role }) => {
      await withServices(cli, async (s) => {
        const org = o.org ? await orgBySlug(s, o.org) : null;
        // Checked first for a clear message; the unique index still decides a race.
        if (await s.users.findByEmail(o.email)) throw userExists(o.email, o.org);
        // One transaction: the user, the membership asked for, and the user's pending invitations accepted.
        const { created, joined } = await s.db
          .transaction(async (trx) => {
            const created = await s.users.create({ name: o.name, email: o.email }, trx);
            if (org) await s.orgs.addMember(org.id, created.id, o.role, trx);
            return { created, joined: await s.invitations.acceptFor(created, trx) };
          })
          .catch((err: unknown) => {
            throw isUniqueViolation(err) ? userExists(o.email, o.org) : err;
          });
        print(cli, `created user ${created.email} (${created.id})${org ? ` as ${o.role} of ${org.slug}` : ''}`);
        const slugs = (await s.orgs.all()).filter((x) => joined.includes(x.id)).map((x) => x.slug);
        if (slugs.length) print(cli, `accepted invitations to ${slugs.join(', ')}`);
      });
    });

  user
    .command('add-to-org')
    .description('make an existing user a member of an organization, or change their role there')
    .requiredOption('--email <EMAIL>', 'the user', email)
    .requiredOption('--org <SLUG>', 'the organization')
    .addOption(new Option('--role <ROLE>', 'their role there').choices(ORG_ROLES).default('member'))
    .action(async (o: { email: string; org: string; role: Role }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const found = await userByEmail(s, o.email);
        const before = (await s.orgs.membershipsOf(found.id)).get(org.id);
        await s.orgs.addMember(org.id, found.id, o.role);
        print(
          cli,
          before === undefined
            ? `added ${found.email} to ${org.slug} as ${o.role}`
            : before === o.role
              ? `${found.email} is already ${o.role} of ${org.slug}`
              : `${found.email} was ${before} of ${org.slug}, now ${o.role}`,
        );
      });
    });

  user
    .command('list')
    .description('users by email: name, organizations (slug:role), id, created')
    .option('--org <SLUG>', "only this organization's members")
    .option('--json', 'print JSON for scripts', false)
    .action(async (o: { org?: string; json: boolean }) => {
      await withServices(cli, async (s) => {
        const org = o.org ? await orgBySlug(s, o.org) : undefined;
        const rows = (await s.users.listWithMemberships(org?.id)).map(({ user: u, memberships }) => ({
          email: u.email,
          name: u.name,
          organizations: memberships.map((m) => `${m.slug}:${m.role}`),
          id: u.id,
          created: u.createdAt,
        }));
        printRows(cli, rows, { email: 'EMAIL', name: 'NAME', organizations: 'ORGANIZATIONS', id: 'ID', created: 'CREATED' }, o.json);
      });
    });
}
