/** `windsock token create|list|revoke` (API access tokens) and `windsock agent-token create` (agent registration tokens). */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { clock } from '../../core/clock';
import { SCOPES } from '../../core/identity';
import { CommandError, email, list, orgBySlug, print, printRows, someOf, userByEmail, uuid, wholeNumber, withServices, type Cli } from '../context';
import { isOneOf } from '../../db/row-types';

/** `all`, or a comma-separated list of scopes, each one of SCOPES. */
function scopes(value: string): string[] {
  if (value.trim() === 'all') return [...SCOPES];
  const named = list(value);
  const unknown = named.filter((x) => !isOneOf(SCOPES, x));
  if (unknown.length || !named.length) {
    throw new InvalidArgumentError(
      `${unknown.length ? `unknown scope(s): ${unknown.join(', ')}` : 'no scope named'}. Valid: all, or any of ${SCOPES.join(', ')}`,
    );
  }
  return named;
}

export function tokenCommands(program: Command, cli: Cli): void {
  const token = program.command('token').description('API access tokens: create, list, revoke');

  token
    .command('create')
    .description('create an API access token for a user; it is printed once')
    .requiredOption('--email <EMAIL>', 'the user it acts as', email)
    .requiredOption('--org <SLUG[,SLUG...]>', 'the organizations it reaches (the user must be a member)', someOf)
    .addOption(new Option('--scopes <all|SCOPE,...>', `its scopes: all, or any of ${SCOPES.join(', ')}`).argParser(scopes).default([...SCOPES], 'all'))
    .option('--description <TEXT>', 'what it is for')
    .option('--expires-in-days <N>', 'how long it is valid, 1 to 3650 days', wholeNumber(1, 3650), 365)
    .action(async (o: { email: string; org: string[]; scopes: string[]; description?: string; expiresInDays: number }) => {
      await withServices(cli, async (s) => {
        const user = await userByEmail(s, o.email);
        const orgs = await Promise.all(o.org.map((slug) => orgBySlug(s, slug)));
        const created = await s.tokens.create({
          userId: user.id,
          organizationIds: orgs.map((x) => x.id),
          scopes: o.scopes,
          description: o.description ?? null,
          expiresAt: new Date(clock.nowMs() + o.expiresInDays * 86_400_000),
        });
        print(cli, `created token ${created.token.id} for ${user.email}, expires ${created.token.expiresAt.toISOString()}; it is shown once:`);
        print(cli, created.jwt);
      });
    });

  token
    .command('list')
    .description('tokens, never their secrets: id, user, description, scopes, organizations, created, expires, revoked')
    .option('--email <EMAIL>', "only this user's tokens", email)
    .option('--org <SLUG>', 'only tokens that reach this organization')
    .option('--json', 'print JSON for scripts', false)
    .action(async (o: { email?: string; org?: string; json: boolean }) => {
      await withServices(cli, async (s) => {
        const user = o.email ? await userByEmail(s, o.email) : undefined;
        const org = o.org ? await orgBySlug(s, o.org) : undefined;
        const rows = (await s.tokens.list({ userId: user?.id, organizationId: org?.id })).map((t) => ({
          id: t.token.id,
          user: t.userEmail,
          description: t.token.description,
          scopes: t.token.scopes.length === SCOPES.length ? ['all'] : t.token.scopes,
          organizations: t.organizations,
          created: t.token.createdAt,
          expires: t.token.expiresAt,
          revoked: t.revokedAt,
        }));
        printRows(
          cli,
          rows,
          {
            id: 'ID',
            user: 'USER',
            description: 'DESCRIPTION',
            scopes: 'SCOPES',
            organizations: 'ORGANIZATIONS',
            created: 'CREATED',
            expires: 'EXPIRES',
            revoked: 'REVOKED',
          },
          o.json,
        );
      });
    });

  token
    .command('revoke')
    .description('revoke a token (its id: `token list`, or `uuid` from GET /v2/access-token)')
    .requiredOption('--id <UUID>', 'the token', uuid)
    .action(async (o: { id: string }) => {
      await withServices(cli, async (s) => {
        if (!(await s.tokens.revoke(o.id))) throw new CommandError(`no active token ${o.id}`);
        print(cli, `revoked token ${o.id}`);
      });
    });

  program
    .command('agent-token')
    .description('agent registration tokens: create')
    .command('create')
    .description('create an agent registration token for an organization; it is printed once')
    .requiredOption('--org <SLUG>', 'the organization')
    .option('--description <TEXT>', 'what it is for')
    .action(async (o: { org: string; description?: string }) => {
      await withServices(cli, async (s) => {
        const org = await orgBySlug(s, o.org);
        const { record, token: secret } = await s.agents.createToken(org.id, null, o.description ?? null);
        print(cli, `created agent registration token ${record.id} for ${org.slug}; it is shown once:`);
        print(cli, secret);
      });
    });
}
