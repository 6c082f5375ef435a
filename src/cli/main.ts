#!/usr/bin/env node
/**
 * `windsock <command>`: serve, migrate, and the administration commands (organizations, users,
 * teams, tokens). Each command reads the same settings as the server from the environment.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { runAgents } from './agent';
import { ConfigError, loadConfig, type Config } from '../config';
import { isUniqueViolation, migrateLatest } from '../db/knex';
import { DomainError, NotFoundError, ValidationError } from '../core/errors';
import { createLogger } from '../http/logger';
import { slugify } from '../pipelines/slug';
import { serve } from '../server';
import { servicesFromConfig, type Services } from '../services';
import { SCOPES, type Organization } from '../core/identity';
import type { Operator } from '../teams/service';
import { clock } from '../core/clock';

const USAGE = `Usage: windsock <command> [options]

  serve [--ephemeral]                     start the HTTP service (migrates first); --ephemeral:
                                          everything in memory, nothing written (WINDSOCK_EPHEMERAL)
  migrate                                 apply database migrations
  org create --name NAME [--slug SLUG] [--teams]
  user create --name NAME --email EMAIL [--org SLUG --role admin|member]
  user add-to-org --email EMAIL --org SLUG [--role admin|member]
                                          an existing user joins (or changes role in) an organization
  team create --org SLUG --name NAME [--slug SLUG] [--description TEXT] [--privacy visible|secret]
  team list --org SLUG
  team delete --org SLUG --team SLUG|UUID     its memberships and pipeline and suite grants go with it
  team add-member --org SLUG --team SLUG|UUID --email EMAIL [--role member|maintainer]
  team remove-member --org SLUG --team SLUG|UUID --email EMAIL
  team set-role --org SLUG --team SLUG|UUID --email EMAIL --role member|maintainer
  token create --email EMAIL --org SLUG[,SLUG...] [--scopes all|s1,s2...]
               [--description TEXT] [--expires-in-days N]     prints the token once
  token revoke --id TOKEN_UUID
  agent-token create --org SLUG [--description TEXT]    prints the registration token once
  pipeline webhook-secret ORG_SLUG/PIPELINE_SLUG [--rotate]
                                          print the secret provider deliveries are checked with;
                                          --rotate replaces it first (the old one is refused from then on)
  emoji add --org SLUG --name NAME --url URL [--alias NAME ...]
                                          add a custom emoji to an organization (GET .../emojis)
  service list --org SLUG                 the organization's notification services
  service create --org SLUG --provider webhook|slack|open_telemetry_tracing --url URL
                 [--description TEXT] [--token TOKEN] [--events e1,e2] [--theme text|emoji]
                 [--header NAME=VALUE ...] [--branches FILTER] [--build-states s1,s2]
                                          --url is the webhook's, the Slack incoming webhook's or the
                                          OpenTelemetry endpoint; --token and --events: webhook;
                                          --theme: slack; --header: open_telemetry_tracing
  service delete|enable|disable --org SLUG --id SERVICE_UUID
  agent --endpoint URL --token TOKEN [--tags queue=default,os=linux] [--spawn N] [--name NAME]
                                          run jobs on this machine (the reference agent)

Settings come from the environment (see README.md).`;

class UsageError extends Error {}

/** A failure of the command itself (not its usage): the message, exit code 1. */
class CommandError extends Error {}

function userExists(email: string, org: string | undefined): CommandError {
  return new CommandError(
    `a user with email "${email.toLowerCase()}" already exists; to make them a member of an organization: ` +
      `windsock user add-to-org --email ${email} --org ${org ?? 'SLUG'} --role admin|member`,
  );
}

function roleOf(values: Record<string, unknown>): 'admin' | 'member' {
  const role = values.role ?? 'member';
  if (role !== 'admin' && role !== 'member') throw new UsageError('--role must be admin or member');
  return role;
}

function teamRoleOf(values: Record<string, unknown>): 'member' | 'maintainer' {
  const role = values.role;
  if (role !== 'member' && role !== 'maintainer') throw new UsageError('--role must be member or maintainer');
  return role;
}

/** The command line acts on teams as the installation's operator: an admin of the organization, with no user of its own. */
function operatorIn(organization: Organization): Operator {
  return { operator: true, organization };
}

function need(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v.trim();
}

async function withServices(config: Config, fn: (s: Services) => Promise<void>): Promise<void> {
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const s = servicesFromConfig(config, logger);
  try {
    await migrateLatest(s.db);
    await fn(s);
  } finally {
    await s.db.destroy();
  }
}

async function orgBySlug(s: Services, slug: string) {
  const org = await s.orgs.findBySlug(slug);
  if (!org) throw new UsageError(`no organization with slug "${slug}"`);
  return org;
}

async function userByEmail(s: Services, email: string) {
  const user = await s.users.findByEmail(email);
  if (!user) throw new UsageError(`no user with email "${email}"`);
  return user;
}

/** `windsock agent`: needs no database and no server settings, only the endpoint and a token. */
async function runAgentCommand(values: Record<string, string | boolean | undefined>): Promise<number> {
  const spawnCount = Number(values.spawn ?? 1);
  if (!Number.isInteger(spawnCount) || spawnCount < 1 || spawnCount > 64) throw new UsageError('--spawn must be a whole number from 1 to 64');
  const tags = typeof values.tags === 'string' && values.tags.trim() ? values.tags.split(',').map((t) => t.trim()) : ['queue=default'];
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => controller.abort());
  await runAgents({
    endpoint: need(values, 'endpoint'),
    token: need(values, 'token'),
    tags,
    name: typeof values.name === 'string' && values.name.trim() ? values.name.trim() : os.hostname(),
    spawn: spawnCount,
    signal: controller.signal,
    log: (line) => process.stderr.write(`windsock agent: ${line}\n`),
  });
  return 0;
}

export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      slug: { type: 'string' },
      email: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
      team: { type: 'string' },
      teams: { type: 'boolean' },
      scopes: { type: 'string' },
      description: { type: 'string' },
      privacy: { type: 'string' },
      'expires-in-days': { type: 'string' },
      id: { type: 'string' },
      endpoint: { type: 'string' },
      token: { type: 'string' },
      tags: { type: 'string' },
      spawn: { type: 'string' },
      url: { type: 'string' },
      alias: { type: 'string', multiple: true },
      rotate: { type: 'boolean' },
      provider: { type: 'string' },
      events: { type: 'string' },
      theme: { type: 'string' },
      header: { type: 'string', multiple: true },
      branches: { type: 'string' },
      'build-states': { type: 'string' },
      ephemeral: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals.slice(0, 2).join(' ');
  if (values.help || positionals.length === 0) {
    out.write(USAGE + '\n');
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  if (positionals[0] === 'agent') return runAgentCommand(values as Record<string, string | boolean | undefined>);
  // A flag only sets its setting, so the flag and the variable behave the same.
  if (positionals[0] === 'serve' && values.ephemeral) process.env.WINDSOCK_EPHEMERAL = 'true';
  const config = loadConfig();
  const print = (line: string): void => {
    out.write(line + '\n');
  };

  switch (positionals[0] === 'serve' || positionals[0] === 'migrate' ? positionals[0] : command) {
    case 'serve':
      await serve(config);
      return -1; // keeps running
    case 'migrate':
      await withServices(config, async () => print('migrations applied'));
      return 0;
    case 'org create':
      await withServices(config, async (s) => {
        const name = need(values, 'name');
        const org = await s.orgs.create({ name, slug: values.slug ?? slugify(name), teamsEnabled: values.teams ?? false });
        print(`created organization ${org.slug} (${org.id})${org.teamsEnabled ? ' with teams enabled' : ''}`);
      });
      return 0;
    case 'user create':
      await withServices(config, async (s) => {
        const role = roleOf(values);
        const name = need(values, 'name');
        const email = need(values, 'email');
        const org = values.org ? await orgBySlug(s, values.org) : null;
        // Checked first for a clear message; the unique index still decides a race.
        if (await s.users.findByEmail(email)) throw userExists(email, values.org);
        const user = await s.users.create({ name, email }).catch((err: unknown) => {
          throw isUniqueViolation(err) ? userExists(email, values.org) : err;
        });
        if (org) await s.orgs.addMember(org.id, user.id, role);
        print(`created user ${user.email} (${user.id})${org ? ` as ${role} of ${org.slug}` : ''}`);
      });
      return 0;
    case 'user add-to-org':
      await withServices(config, async (s) => {
        const role = roleOf(values);
        const org = await orgBySlug(s, need(values, 'org'));
        const user = await userByEmail(s, need(values, 'email'));
        const before = (await s.orgs.membershipsOf(user.id)).get(org.id);
        await s.orgs.addMember(org.id, user.id, role);
        print(
          before === undefined
            ? `added ${user.email} to ${org.slug} as ${role}`
            : before === role
              ? `${user.email} is already ${role} of ${org.slug}`
              : `${user.email} was ${before} of ${org.slug}, now ${role}`,
        );
      });
      return 0;
    case 'team create':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const privacy = values.privacy ?? 'visible';
        if (privacy !== 'visible' && privacy !== 'secret') throw new UsageError('--privacy must be visible or secret');
        const team = await s.teams.create(operatorIn(org), { name: need(values, 'name'), slug: values.slug, description: values.description, privacy });
        print(`created team ${team.slug} (${team.id}) in ${org.slug}`);
      });
      return 0;
    case 'team list':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const { items } = await s.teams.list(operatorIn(org), {}, 0, 1_000_000);
        for (const t of items) print(`${t.slug}\t${t.id}\t${t.privacy}\t${t.name}`);
      });
      return 0;
    case 'team delete':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const team = await s.teams.get(operatorIn(org), need(values, 'team'));
        await s.teams.delete(operatorIn(org), team.id);
        print(`deleted team ${team.slug} from ${org.slug}`);
      });
      return 0;
    case 'team add-member':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const team = await s.teams.get(operatorIn(org), need(values, 'team'));
        const role = values.role === undefined ? undefined : teamRoleOf(values);
        const m = await s.teams.addMember(operatorIn(org), team.id, { email: need(values, 'email'), role });
        print(`added ${m.user.email} to team ${team.slug} as ${m.role}`);
      });
      return 0;
    case 'team remove-member':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const team = await s.teams.get(operatorIn(org), need(values, 'team'));
        const user = await userByEmail(s, need(values, 'email'));
        await s.teams.removeMember(operatorIn(org), team.id, user.id);
        print(`removed ${user.email} from team ${team.slug}`);
      });
      return 0;
    case 'team set-role':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const team = await s.teams.get(operatorIn(org), need(values, 'team'));
        const user = await userByEmail(s, need(values, 'email'));
        const m = await s.teams.setMemberRole(operatorIn(org), team.id, user.id, teamRoleOf(values));
        print(`${user.email} is now ${m.role} of team ${team.slug}`);
      });
      return 0;
    case 'token create':
      await withServices(config, async (s) => {
        const user = await userByEmail(s, need(values, 'email'));
        const orgs = await Promise.all(
          need(values, 'org')
            .split(',')
            .map((slug) => orgBySlug(s, slug.trim())),
        );
        const scopes = !values.scopes || values.scopes === 'all' ? [...SCOPES] : values.scopes.split(',').map((x) => x.trim());
        const days = Number(values['expires-in-days'] ?? 365);
        if (!Number.isInteger(days) || days < 1 || days > 3650) throw new UsageError('--expires-in-days must be a whole number from 1 to 3650');
        const { token, jwt } = await s.tokens.create({
          userId: user.id,
          organizationIds: orgs.map((o) => o.id),
          scopes,
          description: values.description ?? null,
          expiresAt: new Date(clock.nowMs() + days * 86_400_000),
        });
        print(`created token ${token.id} for ${user.email}, expires ${token.expiresAt.toISOString()}; it is shown once:`);
        print(jwt);
      });
      return 0;
    case 'agent-token create':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const { record, token } = await s.agents.createToken(org.id, null, values.description ?? null);
        print(`created agent registration token ${record.id} for ${org.slug}; it is shown once:`);
        print(token);
      });
      return 0;
    case 'emoji add':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        // --alias may repeat, and each may be a comma-separated list.
        const aliases = (values.alias ?? [])
          .flatMap((a) => a.split(','))
          .map((a) => a.trim())
          .filter(Boolean);
        const emoji = await s.emojis.add(org.id, { name: need(values, 'name'), url: need(values, 'url'), aliases });
        print(`added emoji :${emoji.name}:${emoji.aliases.length ? ` (aliases ${emoji.aliases.map((a) => `:${a}:`).join(', ')})` : ''} to ${org.slug}`);
      });
      return 0;
    case 'pipeline webhook-secret':
      await withServices(config, async (s) => {
        const target = positionals[2] ?? '';
        const [orgSlug, pipelineSlug, extra] = target.split('/');
        if (!orgSlug || !pipelineSlug || extra !== undefined || positionals.length > 3) {
          throw new UsageError('pipeline webhook-secret takes one ORG_SLUG/PIPELINE_SLUG');
        }
        const org = await orgBySlug(s, orgSlug);
        let secret: string;
        try {
          secret = await s.pipelines.operatorWebhookSecret(org.id, pipelineSlug, { rotate: values.rotate === true });
        } catch (err) {
          if (err instanceof NotFoundError) throw new CommandError(`no pipeline "${pipelineSlug}" in ${org.slug}`);
          throw err;
        }
        // The secret alone on the last line, for scripts.
        if (values.rotate) print(`rotated the webhook secret of ${org.slug}/${pipelineSlug}; deliveries signed with the old one are refused now. The new one:`);
        print(secret);
      });
      return 0;
    case 'service list':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        let after: string | undefined;
        do {
          const page = await s.notificationServices.list(operatorIn(org), { after, limit: 100 });
          for (const n of page.items) {
            print(`${n.id}  ${n.provider}  ${n.enabled ? 'enabled' : 'disabled'}  ${n.scope}${n.description ? `  ${n.description}` : ''}`);
          }
          after = page.next ?? undefined;
        } while (after);
      });
      return 0;
    case 'service create':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const provider = need(values, 'provider');
        const list = (v: string | undefined) =>
          v === undefined
            ? undefined
            : v
                .split(',')
                .map((x) => x.trim())
                .filter(Boolean);
        const settings: Record<string, unknown> = {};
        if (provider === 'open_telemetry_tracing') settings.endpoint = need(values, 'url');
        else settings.url = need(values, 'url');
        if (values.token !== undefined) settings.token = values.token;
        if (values.events !== undefined) settings.events = list(values.events);
        if (values.theme !== undefined) settings.theme = values.theme;
        if (values.header?.length) {
          settings.headers = Object.fromEntries(
            values.header.map((h) => {
              const eq = h.indexOf('=');
              if (eq < 1) throw new UsageError('--header must be NAME=VALUE');
              return [h.slice(0, eq).trim(), h.slice(eq + 1)];
            }),
          );
        }
        const states = list(values['build-states']);
        const created = await s.notificationServices.create(operatorIn(org), {
          provider,
          description: values.description,
          branch_configuration: values.branches,
          build_states: states ? Object.fromEntries(states.map((x) => [x, true])) : undefined,
          settings,
        });
        print(`created ${created.provider} notification service ${created.id} in ${org.slug}`);
      });
      return 0;
    case 'service delete':
    case 'service enable':
    case 'service disable':
      await withServices(config, async (s) => {
        const org = await orgBySlug(s, need(values, 'org'));
        const id = need(values, 'id');
        if (command === 'service delete') {
          await s.notificationServices.delete(operatorIn(org), id);
          print(`deleted notification service ${id} from ${org.slug}`);
        } else {
          const n = await s.notificationServices.setEnabled(operatorIn(org), id, command === 'service enable');
          print(`notification service ${n.id} is ${n.enabled ? 'enabled' : 'disabled'}`);
        }
      });
      return 0;
    case 'token revoke':
      await withServices(config, async (s) => {
        const id = need(values, 'id');
        if (!(await s.tokens.revoke(id))) throw new UsageError(`no active token ${id}`);
        print(`revoked token ${id}`);
      });
      return 0;
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}

/** What a failed command prints to stderr, and its exit code. */
export function failure(err: unknown): { text: string; code: number } {
  if (err instanceof UsageError) return { text: `windsock: ${err.message}\n\n${USAGE}\n`, code: 2 };
  if (err instanceof ConfigError) return { text: `windsock: ${err.message}\n`, code: 2 };
  if (err instanceof ValidationError) return { text: `windsock: ${err.errors.map((e) => `${e.field} ${e.code}`).join('; ')}\n`, code: 1 };
  if (err instanceof CommandError || err instanceof DomainError) return { text: `windsock: ${err.message}\n`, code: 1 };
  if (isUniqueViolation(err)) {
    // Knex puts the statement, values included, in front of the driver's message: leave it out.
    const detail = (err as { detail?: string }).detail ?? (err as Error).message.split(' - ').at(-1);
    return { text: `windsock: that already exists (${detail})\n`, code: 1 };
  }
  if ((err as { code?: string } | null)?.code) return { text: `windsock: ${(err as Error).message.split(' - ').at(-1)}\n`, code: 1 };
  return { text: `windsock: ${(err as Error)?.stack ?? String(err)}\n`, code: 1 };
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (err: unknown) => {
      const { text, code } = failure(err);
      process.stderr.write(text);
      process.exitCode = code;
    },
  );
}
