/**
 * The generator x language cells of test/generators/clients.test.ts: how each generates a client
 * from a served document, compiles it with the machine's tools (Debian's python3, golang-go; tsc
 * from node_modules) and runs the smoke scenario of scenarios/ against a live Windsock. No cell
 * edits generated code.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { goBuildCache } from '../support/tools';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const SCENARIOS = path.join(__dirname, 'scenarios');
const JAR = path.join(ROOT, 'node_modules', '@openapitools', 'openapi-generator-cli', 'bin', 'openapi-generator.jar');

/** A system tool a cell needs, and the Debian package that gives it. */
export interface Tool {
  name: string;
  check: [string, ...string[]];
  debian: string;
}

export interface Cell {
  id: string;
  generator: string;
  language: string;
  /** Which served document it reads: `/openapi-3.0.json` or `/openapi.json`. */
  document: 'openapi-3.0.json' | 'openapi.json';
  tools: Tool[];
  /** `url`: the live server's, for a generator that takes its base URL from `servers` at generation. */
  generate(dir: string, document: string, url: string): Promise<void>;
  compile(dir: string): Promise<void>;
  /** Runs the scenario with these settings; resolves to what it printed. */
  run(dir: string, env: Record<string, string>): Promise<string>;
}

const JAVA: Tool = { name: 'java', check: ['java', '-version'], debian: 'default-jre-headless' };
/** Debian's python3 (a python3 earlier on PATH, pyenv's say, may lack Debian's modules). */
const PYTHON3 = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const PYTHON: Tool = {
  name: 'python3 with urllib3, dateutil, six, certifi',
  check: [PYTHON3, '-c', 'import urllib3, dateutil, six, certifi'],
  debian: 'python3 python3-urllib3 python3-dateutil python3-six python3-certifi',
};
const GO: Tool = { name: 'go with golang.org/x/oauth2', check: ['go', 'list', 'golang.org/x/oauth2'], debian: 'golang-go golang-golang-x-oauth2-dev' };

/** Debian's Go packages live in one GOPATH; no module proxy, no network. */
export const GO_ENV = { GOPATH: '/usr/share/gocode', GO111MODULE: 'off', GOPROXY: 'off', GOFLAGS: '', CGO_ENABLED: '0' };

export async function exec(file: string, args: string[], options: { cwd?: string; env?: Record<string, string>; timeout?: number } = {}): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(file, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env },
      timeout: options.timeout ?? 240_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    const out = `${e.stderr ?? ''}\n${e.stdout ?? ''}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`${path.basename(file)} ${args.slice(0, 3).join(' ')}: ${e.message.split('\n')[0]}\n${out}`);
  }
}

function openapiGenerator(generator: string, dir: string, document: string, extra: string[] = []): Promise<string> {
  return exec('java', [
    // A short batch run: the C1 compiler alone and the serial collector halve its CPU (10.8 to
    // 5.1 s for the go client here) against the server JVM's defaults, which pay off only in
    // long runs. What it generates is the same.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    '-jar',
    JAR,
    'generate',
    '-i',
    document,
    '-g',
    generator,
    '-o',
    path.join(dir, 'client'),
    '--global-property',
    'apiTests=false,modelTests=false,apiDocs=false,modelDocs=false',
    ...extra,
  ]);
}

/** A TypeScript project: the scenario, the shared part and the client, compiled strictly to CommonJS. */
function typescriptProject(dir: string, scenario: string, options: Record<string, unknown> = {}): void {
  fs.copyFileSync(path.join(SCENARIOS, 'common.ts'), path.join(dir, 'common.ts'));
  fs.copyFileSync(path.join(SCENARIOS, scenario), path.join(dir, 'main.ts'));
  // The project's node_modules (openapi-fetch, axios, @types/node) for the imports.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const compilerOptions = {
    strict: true,
    target: 'es2022',
    module: 'commonjs',
    moduleResolution: 'node10',
    esModuleInterop: true,
    skipLibCheck: true,
    lib: ['es2022', 'dom'],
    types: ['node'],
    outDir: 'out',
    rootDir: '.',
    ...options,
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['main.ts', 'common.ts', 'client/**/*.ts'] }));
}

const tsc = (dir: string) => exec(path.join(BIN, 'tsc'), ['-p', path.join(dir, 'tsconfig.json')], { cwd: dir }).then(() => undefined);
const node = (dir: string, env: Record<string, string>) => exec(process.execPath, [path.join(dir, 'out', 'main.js')], { cwd: dir, env, timeout: 60_000 });

export const CELLS: Cell[] = [
  {
    id: 'openapi-generator-python',
    generator: 'OpenAPI Generator 4.3.1',
    language: 'python',
    document: 'openapi-3.0.json',
    tools: [JAVA, PYTHON],
    generate: async (dir, document) => {
      await openapiGenerator('python', dir, document);
    },
    compile: async (dir) => {
      await exec(PYTHON3, ['-m', 'compileall', '-q', path.join(dir, 'client', 'openapi_client')]);
      await exec(PYTHON3, ['-c', 'import openapi_client'], { env: { PYTHONPATH: path.join(dir, 'client') } });
    },
    run: (dir, env) => exec(PYTHON3, [path.join(SCENARIOS, 'python.py')], { env: { ...env, PYTHONPATH: path.join(dir, 'client') }, timeout: 60_000 }),
  },
  {
    id: 'openapi-generator-typescript-axios',
    generator: 'OpenAPI Generator 4.3.1',
    language: 'typescript-axios',
    document: 'openapi-3.0.json',
    tools: [JAVA],
    generate: async (dir, document) => {
      await openapiGenerator('typescript-axios', dir, document);
      // 4.3.1's code predates TypeScript 4.0, whose strict null checks refuse its `delete` of a
      // required property (TS2790): the client compiles with the checks of its time, the rest of strict on.
      typescriptProject(dir, 'typescript-axios.ts', { strictNullChecks: false });
    },
    compile: tsc,
    run: node,
  },
  {
    id: 'openapi-generator-go',
    generator: 'OpenAPI Generator 4.3.1',
    language: 'go',
    document: 'openapi-3.0.json',
    tools: [JAVA, GO],
    generate: async (dir, document) => {
      await openapiGenerator('go', dir, document, ['--additional-properties', 'packageName=windsock']);
    },
    compile: async (dir) => {
      // GOPATH mode: the client is a package of a GOPATH of its own, beside Debian's.
      const gopath = path.join(dir, 'gopath');
      const pkg = path.join(gopath, 'src', 'windsock');
      fs.mkdirSync(path.dirname(pkg), { recursive: true });
      fs.renameSync(path.join(dir, 'client'), pkg);
      fs.symlinkSync(pkg, path.join(dir, 'client'), 'dir');
      // The client imports github.com/antihax/optional, which Debian does not package: the test's
      // own package of that path (go-optional/, the few types the client uses) stands in for it.
      const optional = path.join(gopath, 'src', 'github.com', 'antihax', 'optional');
      fs.mkdirSync(optional, { recursive: true });
      fs.copyFileSync(path.join(__dirname, 'go-optional', 'optional.go'), path.join(optional, 'optional.go'));
      fs.mkdirSync(path.join(gopath, 'src', 'smoke'));
      fs.copyFileSync(path.join(SCENARIOS, 'go.go'), path.join(gopath, 'src', 'smoke', 'main.go'));
      await exec('go', ['build', '-o', path.join(dir, 'smoke'), 'smoke'], {
        cwd: gopath,
        env: { ...GO_ENV, GOPATH: `${gopath}:${GO_ENV.GOPATH}`, GOCACHE: goBuildCache() },
      });
    },
    run: (dir, env) => exec(path.join(dir, 'smoke'), [], { env, timeout: 60_000 }),
  },
  {
    id: 'hey-api-typescript',
    generator: '@hey-api/openapi-ts 0.94',
    language: 'typescript (fetch)',
    document: 'openapi.json',
    tools: [],
    generate: async (dir, document) => {
      await exec(path.join(BIN, 'openapi-ts'), ['-i', document, '-o', path.join(dir, 'client')]);
      typescriptProject(dir, 'hey-api.ts');
    },
    compile: tsc,
    run: node,
  },
  {
    id: 'openapi-typescript-fetch',
    generator: 'openapi-typescript 7 + openapi-fetch',
    language: 'typescript (fetch)',
    document: 'openapi.json',
    tools: [],
    generate: async (dir, document) => {
      fs.mkdirSync(path.join(dir, 'client'));
      await exec(path.join(BIN, 'openapi-typescript'), [document, '-o', path.join(dir, 'client', 'schema.ts')]);
      typescriptProject(dir, 'openapi-fetch.ts');
    },
    compile: tsc,
    run: node,
  },
  {
    id: 'orval-fetch',
    generator: 'orval 7.13',
    language: 'typescript (fetch)',
    document: 'openapi-3.0.json',
    tools: [],
    generate: async (dir, document, url) => {
      // The base URL is the document's `servers` entry, its `host` variable set to the live server's.
      const host = new URL(url).host;
      const output = {
        target: path.join(dir, 'client', 'client.ts'),
        client: 'fetch',
        mode: 'single',
        baseUrl: { getBaseUrlFromSpecification: true, variables: { host } },
      };
      fs.writeFileSync(path.join(dir, 'orval.config.cjs'), `module.exports = ${JSON.stringify({ windsock: { input: document, output } })};\n`);
      await exec(path.join(BIN, 'orval'), ['--config', path.join(dir, 'orval.config.cjs')], { cwd: dir });
      typescriptProject(dir, 'orval.ts');
    },
    compile: tsc,
    run: node,
  },
];
