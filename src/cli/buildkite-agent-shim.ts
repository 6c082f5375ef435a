/**
 * The `buildkite-agent` command the reference agent puts on each job's PATH, as the real agent
 * does, so a step's `buildkite-agent pipeline upload [file]` works. It is a small Node script
 * (run by the same node as the agent, so it needs neither a build of Windsock nor anything
 * installed) that calls back into the Windsock agent API with the job's credentials from its
 * environment: `BUILDKITE_AGENT_ACCESS_TOKEN`, `BUILDKITE_AGENT_ENDPOINT` (`<endpoint>/v3`) and
 * `BUILDKITE_JOB_ID`. Each command is JavaScript source in ./shim/ that sets `commands.<name>`
 * on the shared runtime (./shim/runtime.ts); a new command is a new file there and one line in
 * COMMANDS below.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACT } from './shim/artifact';
import { PIPELINE } from './shim/pipeline';
import { AGENT_CONTROL } from './shim/agent-control';
import { ANNOTATE } from './shim/annotate';
import { META_DATA } from './shim/meta-data';
import { RUNTIME } from './shim/runtime';
import { SECRET } from './shim/secret';

const COMMANDS = [PIPELINE, ARTIFACT, ANNOTATE, META_DATA, AGENT_CONTROL, SECRET];

const SCRIPT = [
  `'use strict';\nconst fs = require('node:fs');\nconst commands = {};`,
  RUNTIME,
  ...COMMANDS,
  String.raw`
const [name, ...rest] = process.argv.slice(2);
if (!commands[name]) fail('usage: buildkite-agent <' + Object.keys(commands).join('|') + '> ...', 2);
commands[name](rest).catch((err) => fail(err.message));
`,
].join('\n');

/** Writes `buildkite-agent` (a sh wrapper around the script, run by this node) into `dir`; answers `dir`. */
export async function installBuildkiteAgentShim(dir: string): Promise<string> {
  const script = path.join(dir, 'buildkite-agent.js');
  await fs.writeFile(script, SCRIPT);
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  await fs.writeFile(path.join(dir, 'buildkite-agent'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(script)} "$@"\n`, { mode: 0o755 });
  return dir;
}
