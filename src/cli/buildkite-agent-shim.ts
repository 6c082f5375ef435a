/**
 * The `buildkite-agent` command the reference agent puts on each job's PATH, as the real agent
 * does, so a step's `buildkite-agent pipeline upload [file]` works. It is a small Node script
 * (run by the same node as the agent, so it needs neither a build of Windsock nor anything
 * installed) that calls back into the Windsock agent API with the job's credentials from its
 * environment: `BUILDKITE_AGENT_ACCESS_TOKEN`, `BUILDKITE_AGENT_ENDPOINT` (`<endpoint>/v3`) and
 * `BUILDKITE_JOB_ID`. It reads the file given, else stdin when it is a pipe or a file, else
 * `.buildkite/pipeline.yml` (or `.yaml`, or `buildkite.yml`) in the working directory. It never
 * prints the token. A network error or a 5xx is tried again (three times in all) under the same
 * upload id, so the server adds the steps once.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

const SCRIPT = String.raw`'use strict';
const fs = require('node:fs');
const DEFAULTS = ['.buildkite/pipeline.yml', '.buildkite/pipeline.yaml', 'buildkite.yml', 'buildkite.yaml'];
const fail = (message, code = 1) => {
  process.stderr.write('buildkite-agent: ' + message + '\n');
  process.exit(code);
};
function source(file) {
  if (file !== undefined && file !== '-') return [file, fs.readFileSync(file, 'utf8')];
  const stdin = fs.fstatSync(0);
  if (file === '-' || stdin.isFIFO() || stdin.isFile()) return ['(stdin)', fs.readFileSync(0, 'utf8')];
  const found = DEFAULTS.find((f) => fs.existsSync(f));
  if (!found) fail('no pipeline file given and none of ' + DEFAULTS.join(', ') + ' exists');
  return [found, fs.readFileSync(found, 'utf8')];
}
async function main(argv) {
  if (argv[0] !== 'pipeline' || argv[1] !== 'upload' || argv.length > 3) fail('usage: buildkite-agent pipeline upload [file]', 2);
  const { BUILDKITE_AGENT_ACCESS_TOKEN: token, BUILDKITE_AGENT_ENDPOINT: endpoint, BUILDKITE_JOB_ID: job } = process.env;
  if (!token || !endpoint || !job) fail('BUILDKITE_AGENT_ACCESS_TOKEN, BUILDKITE_AGENT_ENDPOINT and BUILDKITE_JOB_ID must be set');
  let name, text;
  try {
    [name, text] = source(argv[2]);
  } catch (err) {
    fail(err.message);
  }
  // One id for every attempt: a retry after a lost answer adds nothing twice.
  const request = { method: 'POST', headers: { Authorization: 'Token ' + token, 'Content-Type': 'application/json' }, body: JSON.stringify({ pipeline: text, uuid: require('node:crypto').randomUUID() }) };
  const url = endpoint.replace(/\/$/, '') + '/jobs/' + encodeURIComponent(job) + '/pipelines';
  let res;
  for (let attempt = 1; ; attempt++) {
    res = await fetch(url, request).catch((err) => (attempt < 3 ? null : fail('uploading ' + name + ' failed: ' + err.message)));
    if (res && res.status < 500) break;
    if (attempt >= 3) break;
    await new Promise((r) => setTimeout(r, 1000 * attempt));
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const details = (body.errors || []).map((e) => '\n  ' + e.field + ': ' + e.code).join('');
    fail('uploading ' + name + ' failed: ' + res.status + ' ' + (body.message || '') + details);
  }
  process.stdout.write('buildkite-agent: uploaded ' + name + ' (' + body.jobs.length + ' jobs)\n');
}
main(process.argv.slice(2)).catch((err) => fail(err.message));
`;

/** Writes `buildkite-agent` (a sh wrapper around the script, run by this node) into `dir`; answers `dir`. */
export async function installBuildkiteAgentShim(dir: string): Promise<string> {
  const script = path.join(dir, 'buildkite-agent.js');
  await fs.writeFile(script, SCRIPT);
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  await fs.writeFile(path.join(dir, 'buildkite-agent'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(script)} "$@"\n`, { mode: 0o755 });
  return dir;
}
