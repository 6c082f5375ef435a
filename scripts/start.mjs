#!/usr/bin/env node
// `npm start`: builds only when an input of the build changed since the last one (see
// build-stamp.mjs), then serves dist/ with the options in package.json's config. Arguments after
// `npm start --` go to `windsock serve`. Signals reach the server, and its exit status is ours.
import { spawn, spawnSync } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { ROOT, built } from './build-stamp.mjs';

if (!built()) {
  process.stderr.write('windsock: sources changed since the last build (or none yet): npm run build\n');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const build = spawnSync(npm, ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const nodeOptions = (process.env.npm_package_config_serverNodeOptions ?? '').split(/\s+/).filter(Boolean);
const server = spawn(process.execPath, [...nodeOptions, join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve', ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 1)));
