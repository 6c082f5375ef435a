/**
 * The command line as a person meets it: --version, --help for every command, a command with
 * subcommands named alone, missing and invalid options named with the valid values (exit 2),
 * input checked with the API's rules, duplicates and unknown names as plain messages (exit 1),
 * the database each command opened named on stderr and never made anew by an admin command, and
 * the list commands (a table, or --json; never a token's secret) on both stores.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeEachDatabase } from '../support/context';
import { run, runCaptured, withStore } from './support';

const COMMANDS = [
  'serve',
  'migrate',
  'org',
  'org create',
  'org list',
  'user',
  'user create',
  'user add-to-org',
  'user list',
  'team',
  'team create',
  'team list',
  'team delete',
  'team add-member',
  'team remove-member',
  'team set-role',
  'token',
  'token create',
  'token list',
  'token revoke',
  'agent-token',
  'agent-token create',
  'pipeline',
  'pipeline webhook-secret',
  'emoji',
  'emoji add',
  'service',
  'service list',
  'service create',
  'service delete',
  'service enable',
  'service disable',
  'agent',
];

describe('windsock help, version and usage errors (no database)', () => {
  it('--version prints the version in package.json', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { version: string };
    expect(await run('--version')).toEqual({ code: 0, text: `${version}\n` });
  });

  it('--help lists every command, and each command and subcommand has its own help', async () => {
    const top = await run('--help');
    expect(top.code).toBe(0);
    for (const name of ['serve', 'migrate', 'org', 'user', 'team', 'token', 'agent-token', 'pipeline', 'emoji', 'service', 'agent']) {
      expect(top.text).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    }
    expect(top.text).toContain('Exit codes: 0 done, 1 the command failed, 2 a usage mistake');
    for (const command of COMMANDS) {
      const help = await run(...command.split(' '), '--help');
      expect({ command, code: help.code }).toEqual({ command, code: 0 });
      expect(help.text).toMatch(new RegExp(`^Usage: windsock ${command} `));
    }
    const serve = (await run('serve', '--help')).text;
    for (const flag of ['--port', '--host', '--data-dir', '--ephemeral', '--fixtures', '--admin-token', '--clock', '--test-controls'])
      expect(serve).toContain(flag);
  });

  it('a command with subcommands named alone lists them on stderr (exit 2), as does windsock alone', async () => {
    const org = await runCaptured('org');
    expect(org.code).toBe(2);
    expect(org.out).toBe('');
    expect(org.err).toMatch(/^windsock: missing command for "windsock org": one of create, list\n\nUsage: windsock org /);
    expect(org.err).toMatch(/^ {2}create \[options\] +create an organization$/m);
    expect(org.err).toMatch(/^ {2}list \[options\] +every organization/m);
    expect((await run('team')).text).toMatch(/one of create, list, delete, add-member, remove-member, set-role\n/);
    expect(await run()).toMatchObject({ code: 2, text: expect.stringMatching(/^windsock: missing command for "windsock": one of serve, migrate, org, /) });
    expect(await run('orgs')).toMatchObject({ code: 2, text: expect.stringMatching(/^windsock: unknown command 'orgs'\n/) });
    expect(await run('org', 'create', '--name', 'x', '--colour', 'red')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: unknown option '--colour'\n/),
    });
  });

  it('names a missing required option first, before any database is opened', async () => {
    const created = await runCaptured('org', 'create');
    expect(created.code).toBe(2);
    expect(created.err).toMatch(/^windsock: required option '--name <NAME>' not specified\n\nUsage: windsock org create \[options\]/);
    expect(await run('token', 'create', '--email', 'a@example.com')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--org <SLUG\[,SLUG...\]>' not specified\n/),
    });
    // Before a value given for another option is refused.
    expect(await run('user', 'create', '--email', 'notanemail', '--role', 'owner')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--name <NAME>' not specified\n/),
    });
    expect(await run('service', 'create', '--org', 'x', '--url', 'https://example.com')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--provider <PROVIDER>' not specified\n/),
    });
  });

  it('lists the valid values of an option that takes a choice', async () => {
    const cases: [string[], RegExp][] = [
      [['user', 'create', '--name', 'x', '--email', 'x@example.com', '--role', 'owner'], /Allowed choices are admin, member\./],
      [['team', 'set-role', '--org', 'x', '--team', 'y', '--email', 'x@example.com', '--role', 'owner'], /Allowed choices are member, maintainer\./],
      [['team', 'create', '--org', 'x', '--name', 'y', '--privacy', 'hidden'], /Allowed choices are visible, secret\./],
      [
        ['service', 'create', '--org', 'x', '--url', 'https://example.com', '--provider', 'pagerduty'],
        /Allowed choices are webhook, slack, open_telemetry_tracing\./,
      ],
      [
        ['token', 'create', '--email', 'x@example.com', '--org', 'x', '--scopes', 'read_all'],
        /unknown scope\(s\): read_all\. Valid: all, or any of read_user, .*, write_notification_services/,
      ],
    ];
    for (const [args, valid] of cases) {
      const r = await run(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.text).toMatch(valid);
    }
  });

  it('checks slugs, emails, ids and numbers with the API rules, and an agent endpoint is a message, never a stack', async () => {
    const cases: [string[], string][] = [
      [
        ['org', 'create', '--name', 'Bad', '--slug', 'bad slug!'],
        "option '--slug <SLUG>' argument 'bad slug!' is invalid. must be lower-case letters, digits and single dashes",
      ],
      [['org', 'create', '--name', 'Bad', '--slug', 'Bad'], "argument 'Bad' is invalid"],
      [['team', 'create', '--org', 'x', '--name', 'T', '--slug', '-t-'], "option '--slug <SLUG>' argument '-t-' is invalid"],
      [['user', 'create', '--name', 'N', '--email', 'notanemail'], "option '--email <EMAIL>' argument 'notanemail' is invalid. must be an email address"],
      [['user', 'create', '--name', ' ', '--email', 'n@example.com'], "option '--name <NAME>' argument ' ' is invalid. must not be blank"],
      [['token', 'create', '--email', 'a@example.com', '--org', ' , '], "option '--org <SLUG[,SLUG...]>' argument ' , ' is invalid. must name at least one"],
      [['token', 'revoke', '--id', '42'], "option '--id <UUID>' argument '42' is invalid. must be a UUID"],
      [['token', 'create', '--email', 'a@example.com', '--org', 'x', '--expires-in-days', '0'], 'must be a whole number from 1 to 3650'],
      [['agent', '--endpoint', 'foo', '--token', 'x'], "option '--endpoint <URL>' argument 'foo' is invalid. must be an absolute http(s) URL"],
      [['agent', '--endpoint', 'ftp://example.com', '--token', 'x'], 'must be an http or https URL'],
    ];
    for (const [args, message] of cases) {
      const r = await run(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.text.split('\n')[0]).toContain(message);
      expect(r.text).not.toMatch(/^\s+at /m);
    }
  });

  it('run from another directory with no DATA_DIR, an admin command does not make ./data there', async () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-cli-cwd-'));
    const saved = { cwd: process.cwd(), env: { ...process.env } };
    try {
      process.chdir(elsewhere);
      delete process.env.DATA_DIR;
      delete process.env.DATABASE_URL;
      const r = await run('user', 'list');
      expect(r).toMatchObject({
        code: 1,
        text: expect.stringContaining(`no database at ${path.join(fs.realpathSync(elsewhere), 'data', 'windsock.sqlite3')}`),
      });
      expect(fs.existsSync(path.join(elsewhere, 'data', 'windsock.sqlite3'))).toBe(false);
    } finally {
      process.chdir(saved.cwd);
      process.env = saved.env;
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("serve's flags set the settings loadConfig reads, so a bad flag is refused as its variable is", async () => {
    const saved = { ...process.env };
    try {
      const r = await run(
        'serve',
        '--port',
        'eighty',
        '--host',
        '0.0.0.0',
        '--data-dir',
        '/tmp/ws-flags',
        '--ephemeral',
        '--fixtures',
        'windsock.yaml',
        '--admin-token',
        'tok',
        '--clock',
        '+2h',
        '--test-controls',
      );
      expect(r).toEqual({ code: 2, text: 'windsock: PORT must be a whole number from 0 to 65535, got "eighty"\n' });
      expect(process.env).toMatchObject({
        PORT: 'eighty',
        HOST: '0.0.0.0',
        DATA_DIR: '/tmp/ws-flags',
        WINDSOCK_EPHEMERAL: 'true',
        WINDSOCK_FIXTURES: 'windsock.yaml',
        WINDSOCK_ADMIN_TOKEN: 'tok',
        WINDSOCK_CLOCK: '+2h',
        WINDSOCK_TEST_CONTROLS: 'true',
      });
    } finally {
      process.env = saved;
    }
  });
});

describeEachDatabase('an admin command never makes a new database', null, (_get, kind) => {
  const store = withStore(kind, 'windsock-cli-nodb-', { migrate: false });

  it('refuses with where it looked and how to start, and makes nothing there', async () => {
    const r = await runCaptured('org', 'list');
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    if (kind === 'sqlite') {
      const file = path.join(store.dir(), 'windsock.sqlite3');
      expect(r.err).toBe(
        `windsock: no database at ${file} (DATA_DIR is ${store.dir()}); start the service there once (\`windsock serve\`, or \`windsock migrate\`), or set DATA_DIR or DATABASE_URL to the database the server uses\n`,
      );
      expect(fs.existsSync(file)).toBe(false);
    } else {
      const shown = new URL(store.url()!);
      shown.password = '';
      expect(r.err).toBe(
        `windsock: using Postgres database ${shown}\nwindsock: the Postgres database ${shown} has no Windsock tables; start the service there once (\`windsock serve\`, or \`windsock migrate\`), or set DATA_DIR or DATABASE_URL to the database the server uses\n`,
      );
      expect(r.err).not.toContain('never-printed');
    }
    // `migrate` may make it; then the same command works and says which database it opened.
    expect(await run('migrate')).toEqual({ code: 0, text: 'migrations applied\n' });
    const after = await runCaptured('org', 'list');
    expect(after).toMatchObject({ code: 0, out: 'SLUG  NAME  TEAMS  ID  CREATED\n' });
    expect(after.err).toMatch(
      kind === 'sqlite'
        ? `windsock: using SQLite database ${path.join(store.dir(), 'windsock.sqlite3')}\n`
        : /^windsock: using Postgres database postgres:\/\/postgres@/,
    );
    expect(after.err).not.toContain('never-printed');
  });
});

describeEachDatabase('list commands, duplicates and unknown names', null, (_get, kind) => {
  withStore(kind, 'windsock-cli-lists-');

  it('org, user and token lists: a table by default, JSON with --json, never a secret', async () => {
    expect((await run('org', 'create', '--name', 'Zeta Works', '--teams')).code).toBe(0);
    expect((await run('org', 'create', '--name', 'Alpha', '--slug', 'alpha-co')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Ann', '--email', 'ann@example.com', '--org', 'alpha-co', '--role', 'admin')).code).toBe(0);
    expect((await run('user', 'add-to-org', '--email', 'ann@example.com', '--org', 'zeta-works')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Bob', '--email', 'bob@example.com', '--org', 'zeta-works')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Cy', '--email', 'cy@example.com')).code).toBe(0);

    const orgs = await run('org', 'list');
    expect(orgs.code).toBe(0);
    const lines = orgs.text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SLUG +NAME +TEAMS +ID +CREATED$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^alpha-co +Alpha +false +[0-9a-f-]{36} +\d{4}-\d\d-\d\dT[\d:.]+Z$/),
      expect.stringMatching(/^zeta-works +Zeta Works +true +[0-9a-f-]{36} +/),
    ]);
    const orgsJson = JSON.parse((await run('org', 'list', '--json')).text) as unknown[];
    expect(orgsJson).toEqual([
      { slug: 'alpha-co', name: 'Alpha', teams: false, id: expect.any(String), created: expect.any(String) },
      { slug: 'zeta-works', name: 'Zeta Works', teams: true, id: expect.any(String), created: expect.any(String) },
    ]);

    const users = (await run('user', 'list')).text.trimEnd().split('\n');
    expect(users[0]).toMatch(/^EMAIL +NAME +ORGANIZATIONS +ID +CREATED$/);
    expect(users.slice(1)).toEqual([
      expect.stringMatching(/^ann@example\.com +Ann +alpha-co:admin,zeta-works:member +[0-9a-f-]{36} /),
      expect.stringMatching(/^bob@example\.com +Bob +zeta-works:member +/),
      expect.stringMatching(/^cy@example\.com +Cy +- +/),
    ]);
    const members = JSON.parse((await run('user', 'list', '--org', 'zeta-works', '--json')).text) as { email: string; organizations: string[] }[];
    expect(members.map((m) => [m.email, m.organizations])).toEqual([
      ['ann@example.com', ['alpha-co:admin', 'zeta-works:member']],
      ['bob@example.com', ['zeta-works:member']],
    ]);

    const first = await run('token', 'create', '--email', 'ann@example.com', '--org', 'alpha-co,zeta-works', '--description', 'deploys');
    const firstJwt = first.text.trim().split('\n').at(-1)!;
    const firstId = /created token ([0-9a-f-]{36})/.exec(first.text)![1]!;
    const second = await run('token', 'create', '--email', 'bob@example.com', '--org', 'zeta-works', '--scopes', 'read_builds,read_pipelines');
    const secondJwt = second.text.trim().split('\n').at(-1)!;
    expect((await run('token', 'revoke', '--id', firstId)).code).toBe(0);

    const tokens = await run('token', 'list');
    expect(tokens.code).toBe(0);
    expect(tokens.text).not.toContain(firstJwt);
    expect(tokens.text).not.toContain(secondJwt);
    const rows = tokens.text.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^ID +USER +DESCRIPTION +SCOPES +ORGANIZATIONS +CREATED +EXPIRES +REVOKED$/);
    expect(rows.slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^${firstId} +ann@example\\.com +deploys +all +alpha-co,zeta-works +\\S+Z +\\S+Z +\\S+Z$`)),
      expect.stringMatching(/^[0-9a-f-]{36} +bob@example\.com +- +read_builds,read_pipelines +zeta-works +\S+Z +\S+Z +-$/),
    ]);
    const byAnn = JSON.parse((await run('token', 'list', '--email', 'ANN@example.com', '--json')).text) as Record<string, unknown>[];
    expect(byAnn).toEqual([
      {
        id: firstId,
        user: 'ann@example.com',
        description: 'deploys',
        scopes: ['all'],
        organizations: ['alpha-co', 'zeta-works'],
        created: expect.any(String),
        expires: expect.any(String),
        revoked: expect.any(String),
      },
    ]);
    const inAlpha = JSON.parse((await run('token', 'list', '--org', 'alpha-co', '--json')).text) as { id: string }[];
    expect(inAlpha.map((t) => t.id)).toEqual([firstId]);
    expect(JSON.parse((await run('token', 'list', '--email', 'cy@example.com', '--json')).text)).toEqual([]);
  });

  it('a duplicate organization slug, user email or team slug is a plain message (exit 1)', async () => {
    expect(await run('org', 'create', '--name', 'Other', '--slug', 'alpha-co')).toEqual({
      code: 1,
      text: 'windsock: an organization with slug "alpha-co" already exists (windsock org list shows them)\n',
    });
    expect(await run('user', 'create', '--name', 'Ann 2', '--email', 'Ann@Example.com')).toMatchObject({
      code: 1,
      text: expect.stringMatching(/^windsock: a user with email "ann@example\.com" already exists; to make them a member/),
    });
    expect((await run('team', 'create', '--org', 'zeta-works', '--name', 'Core')).code).toBe(0);
    expect(await run('team', 'create', '--org', 'zeta-works', '--name', 'Core Two', '--slug', 'core')).toEqual({
      code: 1,
      text: 'windsock: name has already been taken (a team with this name or slug exists)\n',
    });
  });

  it('an unknown organization, user or token is a failed command (exit 1) naming it', async () => {
    expect(await run('user', 'list', '--org', 'nowhere')).toEqual({ code: 1, text: 'windsock: no organization with slug "nowhere"\n' });
    expect(await run('token', 'list', '--email', 'nobody@example.com')).toEqual({ code: 1, text: 'windsock: no user with email "nobody@example.com"\n' });
    expect(await run('token', 'revoke', '--id', '00000000-0000-4000-8000-000000000000')).toEqual({
      code: 1,
      text: 'windsock: no active token 00000000-0000-4000-8000-000000000000\n',
    });
  });
});
