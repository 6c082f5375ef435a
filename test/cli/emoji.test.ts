/**
 * `windsock emoji add`: an organization's custom emojis come from the CLI and show in
 * `GET .../emojis`; bad input is refused with the field named and exit code 1, a missing
 * option with the command's help (exit code 2).
 */
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { run, withTempDataDir } from './support';

describe('windsock emoji add (embedded SQLite in a temp data dir)', () => {
  withTempDataDir('windsock-emoji-');

  it('adds emojis with aliases that the API then lists, and refuses bad ones', async () => {
    expect((await run('org', 'create', '--name', 'Emoji Inc')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Eve', '--email', 'eve@example.com', '--org', 'emoji-inc', '--role', 'admin')).code).toBe(0);
    const added = await run(
      'emoji',
      'add',
      '--org',
      'emoji-inc',
      '--name',
      'shipit',
      '--url',
      'https://example.com/shipit.png',
      '--alias',
      'squirrel',
      '--alias',
      'ship,sq',
    );
    expect(added).toEqual({ code: 0, text: 'added emoji :shipit: (aliases :squirrel:, :ship:, :sq:) to emoji-inc\n' });
    expect((await run('emoji', 'add', '--org', 'emoji-inc', '--name', 'rocket', '--url', 'https://example.com/rocket.png')).text).toBe(
      'added emoji :rocket: to emoji-inc\n',
    );

    const taken = await run('emoji', 'add', '--org', 'emoji-inc', '--name', 'squirrel', '--url', 'https://example.com/s.png');
    expect(taken.code).toBe(1);
    expect(taken.text).toMatch(/^windsock: name "squirrel" is already an emoji of this organization/);
    const badUrl = await run('emoji', 'add', '--org', 'emoji-inc', '--name', 'x', '--url', 'ftp://example.com/x.png');
    expect(badUrl.code).toBe(1);
    expect(badUrl.text).toMatch(/^windsock: url /);
    const missing = await run('emoji', 'add', '--org', 'emoji-inc', '--name', 'x');
    expect(missing.code).toBe(2);
    expect(missing.text).toMatch(/^windsock: required option '--url <URL>' not specified\n/);
    const noOrg = await run('emoji', 'add', '--org', 'nope', '--name', 'x', '--url', 'https://example.com/x.png');
    expect(noOrg).toEqual({ code: 1, text: 'windsock: no organization with slug "nope"\n' });

    const created = await run('token', 'create', '--email', 'eve@example.com', '--org', 'emoji-inc', '--scopes', 'read_user');
    const jwt = created.text.trim().split('\n').at(-1)!;
    const s = await startServer(loadConfig(), new PassThrough());
    try {
      const res = await request(s.url).get('/v2/organizations/emoji-inc/emojis').set('Authorization', `Bearer ${jwt}`).expect(200);
      expect(res.body.slice(-2)).toEqual([
        { name: 'rocket', url: 'https://example.com/rocket.png' },
        { name: 'shipit', url: 'https://example.com/shipit.png', aliases: ['squirrel', 'ship', 'sq'] },
      ]);
    } finally {
      await s.close();
    }
  });
});
