/**
 * The system tools some suites drive (Chromium, Go, Perl's OpenAPI::Client, Java), decided in one
 * place. `.ci/run` installs them from Debian and runs every suite; on a machine with only Node
 * (the README's `npm ci && npm test`) a suite whose tool is missing is skipped with one line
 * naming the tool and the Debian package that provides it. `CI=true` makes a missing tool fatal,
 * as for Postgres (test/support/global-setup.ts): CI never passes by skipping.
 *
 * The tools run with the caller's PATH and HOME plus the variables they read to find their own
 * libraries and caches (`toolEnv()`): PERL5LIB for a Perl module installed outside the system
 * path, GOPATH/GOROOT/GOCACHE for Go, JAVA_HOME for Java.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type ToolName = 'chromium' | 'go' | 'perl-openapi-client' | 'java';

interface Tool {
  /** What a person reads in the skip line. */
  label: string;
  /** The Debian package that provides it. */
  debian: string;
  /** Whether this machine has it (run once per file). */
  present(): boolean;
}

/** The variables a tool reads to find its libraries, caches or runtime: passed through when set. */
const TOOL_VARIABLES = ['PERL5LIB', 'PERL_LOCAL_LIB_ROOT', 'GOPATH', 'GOROOT', 'GOCACHE', 'GOMODCACHE', 'GOFLAGS', 'JAVA_HOME', 'LANG', 'LC_ALL', 'TMPDIR'];

/** PATH and HOME, and whichever of the tools' own variables are set here. */
export function toolEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', ...TOOL_VARIABLES]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * Go's build cache for the suites that compile Go (the SDK's smoke program, the generated Go
 * client): GOCACHE when set, else one directory under the temp directory that outlives the run.
 * The cache is keyed by content (Go's own), so sharing it changes no build; an empty one costs
 * each build a compile of the standard library it imports (about 13 CPU-seconds here).
 */
export function goBuildCache(): string {
  return process.env.GOCACHE ?? path.join(os.tmpdir(), 'windsock-go-cache', 'build');
}

/** An executable called `name` in a PATH directory, if any. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** Whether `file args...` runs and exits 0 with the tools' environment. */
function runs(file: string, args: string[]): boolean {
  try {
    execFileSync(file, args, { env: toolEnv(), stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/** Chromium: `CHROMIUM_PATH`, else `chromium` (Debian's name) or `chromium-browser` on PATH. */
export function chromiumPath(): string | undefined {
  if (process.env.CHROMIUM_PATH) return fs.existsSync(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : undefined;
  return onPath('chromium') ?? onPath('chromium-browser');
}

const TOOLS: Record<ToolName, Tool> = {
  chromium: { label: 'Chromium (or CHROMIUM_PATH)', debian: 'chromium', present: () => chromiumPath() !== undefined },
  go: { label: 'Go (`go` on PATH)', debian: 'golang-go', present: () => onPath('go') !== undefined && runs('go', ['version']) },
  'perl-openapi-client': {
    label: "Perl's OpenAPI::Client (`perl -MOpenAPI::Client`, PERL5LIB honoured)",
    debian: 'libopenapi-client-perl',
    present: () => onPath('perl') !== undefined && runs('perl', ['-MOpenAPI::Client', '-e1']),
  },
  java: { label: 'Java (`java` on PATH)', debian: 'default-jdk-headless', present: () => onPath('java') !== undefined && runs('java', ['-version']) },
};

const decided = new Map<ToolName, boolean>();

/**
 * Whether the suites needing `name` run here. Missing outside CI: false, after one line on
 * stderr naming the tool and its Debian package. Missing with CI=true: throws.
 */
export function hasTool(name: ToolName): boolean {
  const known = decided.get(name);
  if (known !== undefined) return known;
  const tool = TOOLS[name];
  const present = tool.present();
  if (!present) {
    const file = path.relative(path.resolve(__dirname, '../..'), expect.getState().testPath ?? '') || 'a suite';
    if (process.env.CI === 'true') {
      throw new Error(`CI=true: ${file} needs ${tool.label}, which is missing here: apt-get install ${tool.debian}`);
    }
    process.stderr.write(`\n!! skipped ${file}: needs ${tool.label}, not found (Debian: apt-get install ${tool.debian}; CI=true makes this fatal)\n\n`);
  }
  decided.set(name, present);
  return present;
}

/** `describe` when the tool is here, `describe.skip` (after the line above) when not. */
export function describeWithTool(name: ToolName): jest.Describe {
  return hasTool(name) ? describe : describe.skip;
}
