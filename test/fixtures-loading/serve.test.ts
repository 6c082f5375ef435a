/**
 * `windsock serve` with WINDSOCK_FIXTURES, WINDSOCK_ADMIN_TOKEN and WINDSOCK_TEST_CONTROLS, as a
 * consumer's CI starts it: the real server (startServer) on 127.0.0.1 port 0 with a SQLite file
 * in a temporary DATA_DIR. A bad file or admin token stops the start before anything listens;
 * a good one serves the fixture, and the reset endpoint returns to it over HTTP.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { FixtureError } from '../../src/fixtures/load';
import { AdminTokenError } from '../../src/bootstrap';

const ADMIN = 'serve-admin-0123456789-abcdefghijklmnop';
const GOOD = `organizations: [{ slug: acme }]
users: [{ email: ada@example.com, organizations: { acme: admin } }]
pipelines:
  - organization: acme
    name: Web
    repository: git@github.com:acme/web.git
    configuration: "steps:\\n  - command: make\\n"
    builds: [{ message: one }, { message: two, state: failed }]
`;

const silent = new Writable({ write: (_c, _e, cb) => cb() });

function setup(fixture?: string, env: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-serve-fixtures-'));
  const file = path.join(dir, 'windsock.yaml');
  if (fixture !== undefined) fs.writeFileSync(file, fixture);
  return {
    dir,
    config: loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: path.join(dir, 'data'),
      LOG_LEVEL: 'silent',
      ...(fixture !== undefined && { WINDSOCK_FIXTURES: file }),
      ...env,
    }),
  };
}

describe('windsock serve with fixtures, an admin token and test controls', () => {
  it('serves the fixture; the reset endpoint returns to it', async () => {
    const { dir, config } = setup(GOOD, { WINDSOCK_ADMIN_TOKEN: ADMIN, WINDSOCK_TEST_CONTROLS: 'true' });
    const running = await startServer(config, silent);
    try {
      const headers = { Authorization: `Bearer ${ADMIN}` };
      const builds = `${running.url}/v2/organizations/acme/pipelines/web/builds`;
      const before = (await (await fetch(builds, { headers })).json()) as { number: number; state: string }[];
      expect(before.map((b) => [b.number, b.state])).toEqual([
        [2, 'failed'],
        [1, 'passed'],
      ]);
      const made = await fetch(builds, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ commit: 'HEAD', branch: 'main' }),
      });
      expect(made.status).toBe(201);
      const reset = await fetch(`${running.url}/_windsock/reset`, { method: 'POST', headers });
      expect(reset.status).toBe(200);
      expect(((await reset.json()) as { state: string }).state).toBe('fixtures');
      const after = (await (await fetch(builds, { headers })).json()) as { number: number }[];
      expect(after.map((b) => b.number)).toEqual([2, 1]);
    } finally {
      await running.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on port 0 without PUBLIC_URL, the links it writes name the port it bound', async () => {
    const { dir, config } = setup(GOOD, { WINDSOCK_ADMIN_TOKEN: ADMIN });
    const running = await startServer(config, silent);
    try {
      const headers = { Authorization: `Bearer ${ADMIN}` };
      const port = new URL(running.url).port;
      expect(port).not.toBe('0');
      const res = await fetch(`${running.url}/v2/organizations/acme/pipelines/web/builds?per_page=1`, { headers });
      expect(res.headers.get('link')).toBe(`<${running.url}/v2/organizations/acme/pipelines/web/builds?per_page=1&page=2>; rel="next"`);
      const [build] = (await res.json()) as { url: string }[];
      expect(build!.url).toBe(`${running.url}/v2/organizations/acme/pipelines/web/builds/2`);
    } finally {
      await running.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  // On port 0 the port is bound first (the links name it), but nobody has been told it yet.
  it('a bad file stops the start with its line, before anything listens', async () => {
    const { dir, config } = setup(GOOD.replace('state: failed', 'state: sideways'));
    await expect(startServer(config, silent)).rejects.toThrow(FixtureError);
    await expect(startServer(config, silent)).rejects.toThrow(/pipelines\[0\]\.builds\[1\]\.state \(line 8\)/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a short admin token stops the start, naming WINDSOCK_ADMIN_TOKEN', async () => {
    const { dir, config } = setup(undefined, { WINDSOCK_ADMIN_TOKEN: 'too-short' });
    await expect(startServer(config, silent)).rejects.toThrow(AdminTokenError);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
