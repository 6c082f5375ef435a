/**
 * The package as a consumer's CI gets it (`npm run test:package`, in CI): `npm pack` (which builds
 * first, unless dist/ is already built from the sources as they are), installed into an empty directory with `npm install <tarball>`, then `npx windsock serve
 * --ephemeral` answers /readyz and an authenticated call with the token it printed on stderr.
 *
 * The tarball must hold everything the installed tool runs on: built JavaScript (an install from a
 * tarball runs no `prepare`, and a consumer has no TypeScript), the bundled spec, the migrations.
 * npm's install scripts are skipped and better-sqlite3's native module (the only production
 * dependency with one) is taken from this checkout's, already built for this Node, when the
 * versions match: compiling it from source takes minutes and proves nothing about the package.
 * Dependencies come from npm's cache where it has them (`--prefer-offline`; `npm ci` fills it).
 *
 * The typed client (`windsock/client`): test/package/consumer/ is a consumer's code, copied into
 * the empty project, type-checked strictly against the installed declarations only (NodeNext, as
 * ESM and as CommonJS, and a bundler's resolution), then run against the installed serve.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtFromThisTree } from '../support/build-stamp';

const ROOT = path.resolve(__dirname, '../..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const NPX = process.platform === 'win32' ? 'npx.cmd' : 'npx';

/** The environment of a consumer's shell: none of the npm_* settings of the `npm run` this runs under. */
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))) as NodeJS.ProcessEnv;

const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const CONSUMER = path.join(__dirname, 'consumer');

const versionOf = (dir: string): string => (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;

describe('the packed tarball, installed into an empty directory', () => {
  let dir: string;
  let tarball: string;
  let app: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-package-'));
    app = path.join(dir, 'consumer');
    fs.mkdirSync(app);
    // As a maintainer packs it: `prepare` (npm run build) runs first, so the tarball holds a fresh
    // build; when dist/'s stamp says it is one of the sources as they are (npm ci's build, in CI),
    // building it again would make the same files, so pack skips the script.
    const pack = ['pack', '--pack-destination', dir, ...(builtFromThisTree(ROOT) ? ['--ignore-scripts'] : [])];
    const name = execFileSync(NPM, pack, { cwd: ROOT, env, encoding: 'utf8' }).trim().split('\n').at(-1)!;
    tarball = path.join(dir, name);
    execFileSync(NPM, ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', tarball], { cwd: app, env, stdio: 'pipe' });
    const installed = path.join(app, 'node_modules', 'better-sqlite3');
    const ours = path.join(ROOT, 'node_modules', 'better-sqlite3');
    if (versionOf(installed) === versionOf(ours)) {
      fs.mkdirSync(path.join(installed, 'build', 'Release'), { recursive: true });
      fs.copyFileSync(path.join(ours, 'build', 'Release', 'better_sqlite3.node'), path.join(installed, 'build', 'Release', 'better_sqlite3.node'));
    } else {
      execFileSync(NPM, ['rebuild', 'better-sqlite3'], { cwd: app, env, stdio: 'pipe' });
    }
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds the built tool, its spec and its migrations, and no sources, tests or build leftovers', () => {
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
    expect(files).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/README.md',
        'package/dist/src/cli/main.js',
        'package/dist/src/server.js',
        // The reference agent calls the API through the project's own SDK.
        'package/dist/clients/typescript/src/index.js',
        'package/dist/src/web/assets/app.css',
        'package/openapi/fixtures.schema.json',
        'package/generated/openapi-3.0.json',
        'package/dist/src/db/migrations/20261123100000_foundation.js',
        'package/generated/openapi.json',
        'package/generated/openapi.yaml',
        'package/openapi/openapi.yaml',
      ]),
    );
    // TypeScript ships only as the client's declarations (and the spec types they import).
    const declarations = (f: string) => /^package\/dist\/(clients\/typescript\/src\/[a-z]+\.d\.m?ts|generated\/api\.d\.ts)$/.test(f);
    expect(
      files.filter((f) => /^package\/(src|test|scripts|dist\/scripts|dist\/test|node_modules)\//.test(f) || (/\.(ts|map)$/.test(f) && !declarations(f))),
    ).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining([
        'package/CHANGELOG.md',
        'package/dist/clients/typescript/src/index.d.ts',
        'package/dist/clients/typescript/src/index.d.mts',
        'package/dist/clients/typescript/src/index.mjs',
        'package/dist/generated/api.d.ts',
      ]),
    );
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, unknown>;
    expect(manifest).toMatchObject({ bin: { windsock: 'dist/src/cli/main.js' }, engines: { node: expect.stringMatching(/^>=20/) } });
    expect(manifest.private).toBeUndefined();
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  /** `npx windsock serve ...` in the consumer directory; resolves once it logs its URL and `ready(out, err)` holds. */
  async function serveFromPackage<T>(
    args: string[],
    extraEnv: NodeJS.ProcessEnv,
    ready: (out: string, err: string) => T | undefined,
    use: (url: string, found: T) => Promise<void>,
  ): Promise<{ out: string; err: string }> {
    const proc = spawn(NPX, ['windsock', 'serve', ...args], {
      cwd: app,
      env: { ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: npx runs the tool as its child, and the stop signal goes to both.
      detached: true,
    });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    // Closed once every process holding its output (npx and the tool it started) is gone.
    const closed = new Promise<void>((resolve) => proc.once('close', () => resolve()));
    try {
      // The URL is logged on stdout, the token printed on stderr: the pipes may be read in either order.
      const [url, found] = await new Promise<[string, T]>((resolve, reject) => {
        const check = () => {
          const url = /"url":"(http:[^"]+)"[^\n]*"msg":"windsock listening"/.exec(out)?.[1];
          const value = url ? ready(out, err) : undefined;
          if (url && value !== undefined) resolve([url, value]);
        };
        proc.stdout.on('data', check);
        proc.stderr.on('data', check);
        void exited.then((code) => reject(new Error(`exited ${code} before listening:\n${out}${err}`)));
      });
      await use(url, found);
    } finally {
      // Gone already when it exited before listening: that error is the one to report.
      if (proc.exitCode === null) process.kill(-proc.pid!, 'SIGTERM');
    }
    await closed;
    // The tool shut down as it does on SIGTERM, without an error.
    expect(out).toMatch(/"signal":"SIGTERM","msg":"shutting down"/);
    expect(out).not.toMatch(/"level":50/);
    expect(err).not.toMatch(/Error|shutdown failed/);
    return { out, err };
  }

  it('npx windsock serve --ephemeral answers /readyz and an authenticated call', async () => {
    await serveFromPackage(
      ['--ephemeral'],
      {},
      (_out, err) => /^ {2}(eyJ\S+)$/m.exec(err)?.[1],
      async (url, token) => {
        expect((await fetch(`${url}/readyz`)).status).toBe(200);
        const pipelines = await fetch(`${url}/v2/organizations/default/pipelines`, { headers: { Authorization: `Bearer ${token}` } });
        expect(pipelines.status).toBe(200);
        expect(await pipelines.json()).toEqual([]);
        // Nothing was written where it ran: no ./data.
        expect(fs.existsSync(path.join(app, 'data'))).toBe(false);
      },
    );
  });

  it('gives a typed client at windsock/client: strict consumers compile (NodeNext as ESM and CommonJS, bundler) and run against npx windsock serve', async () => {
    for (const f of fs.readdirSync(CONSUMER)) fs.copyFileSync(path.join(CONSUMER, f), path.join(app, f));
    const strict = {
      strict: true,
      noUncheckedIndexedAccess: true,
      target: 'ES2022',
      lib: ['ES2023', 'DOM'],
      skipLibCheck: false,
      typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      types: ['node'],
    };
    const files = ['consumer.mts', 'consumer.cts', 'scenario.ts'];
    fs.writeFileSync(
      path.join(app, 'tsconfig.nodenext.json'),
      JSON.stringify({ compilerOptions: { ...strict, module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out' }, files }),
    );
    fs.writeFileSync(
      path.join(app, 'tsconfig.bundler.json'),
      JSON.stringify({ compilerOptions: { ...strict, module: 'ESNext', moduleResolution: 'bundler', noEmit: true }, files: ['consumer.mts', 'scenario.ts'] }),
    );
    const tsc = (project: string) => {
      try {
        execFileSync(process.execPath, [TSC, '-p', project], { cwd: app, env, encoding: 'utf8' });
      } catch (err) {
        throw new Error(`tsc -p ${project} failed:\n${(err as { stdout?: string }).stdout ?? ''}`);
      }
    };
    // skipLibCheck is off: the shipped declarations themselves must be sound.
    tsc('tsconfig.bundler.json');
    tsc('tsconfig.nodenext.json');
    expect(fs.readdirSync(path.join(app, 'out')).sort()).toEqual(['consumer.cjs', 'consumer.mjs', 'scenario.js']);

    await serveFromPackage(
      ['--ephemeral'],
      {},
      (_out, err) => /^ {2}(eyJ\S+)$/m.exec(err)?.[1],
      async (url, token) => {
        const run = (file: string) =>
          JSON.parse(execFileSync(process.execPath, [path.join('out', file), url, token], { cwd: app, env, encoding: 'utf8' })) as Record<string, unknown>;
        const esm = run('consumer.mjs');
        expect(esm).toEqual({
          loadedAs: 'esm',
          pipeline: 'consumer-esm',
          build: { number: 3, state: 'scheduled' },
          // Newest first, one a page, each page the one `Link: rel="next"` named.
          numbers: [3, 2, 1],
          notFound: { status: 404, message: 'No pipeline found' },
        });
        // The CommonJS entry: the same answers, and the same error class (one build behind both entries).
        const cjs = run('consumer.cjs');
        expect(cjs).toMatchObject({
          loadedAs: 'commonjs',
          pipeline: 'consumer-cjs',
          build: { number: 3, state: 'scheduled' },
          numbers: [3, 2, 1],
          notFound: { status: 404 },
        });
      },
    );
  });

  it('starts from a fixture file with a known admin token, and the reset returns to it', async () => {
    const admin = 'package-test-admin-token-0123456789abcdef';
    fs.writeFileSync(
      path.join(app, 'windsock.yaml'),
      [
        'organizations:',
        '  - { slug: acme, name: Acme }',
        'users:',
        '  - { name: Ada, email: ada@example.com, organizations: { acme: admin } }',
        'pipelines:',
        '  - organization: acme',
        '    name: Web',
        '    repository: git@github.com:acme/web.git',
        '    configuration: |',
        '      steps:',
        '        - { label: Test, command: make test }',
        '    builds:',
        '      - { message: first }',
        '      - { message: second, state: failed, jobs: [{ exit_status: 2 }] }',
        '',
      ].join('\n'),
    );
    const { err } = await serveFromPackage(
      ['--ephemeral', '--fixtures', 'windsock.yaml', '--admin-token', admin, '--test-controls'],
      {},
      () => true,
      async (url) => {
        const auth = { Authorization: `Bearer ${admin}` };
        const builds = async () =>
          (await (await fetch(`${url}/v2/organizations/acme/pipelines/web/builds`, { headers: auth })).json()) as { number: number; state: string }[];
        expect((await builds()).map((b) => [b.number, b.state])).toEqual([
          [2, 'failed'],
          [1, 'passed'],
        ]);
        const created = await fetch(`${url}/v2/organizations/acme/pipelines/web/builds`, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({ commit: 'HEAD', branch: 'main' }),
        });
        expect(created.status).toBe(201);
        expect(await builds()).toHaveLength(3);
        expect((await fetch(`${url}/_windsock/reset`, { method: 'POST', headers: auth })).status).toBe(200);
        expect((await builds()).map((b) => b.number)).toEqual([2, 1]);
      },
    );
    // The given token is the user's own: nothing secret is printed.
    expect(err).not.toContain(admin);
    expect(err).not.toMatch(/eyJ/);
  });
});
