#!/usr/bin/env node
// What `npm start` checks before serving dist/: a fingerprint of every input of `npm run build`
// (path, size and modification time of the sources, the spec's generated types, the client, the
// web assets, the build's configuration and scripts). `npm run build` writes it last, as
// dist/.build-stamp, so a build that failed half-way leaves none; `npm start` rebuilds when the
// stamp is missing or differs, and otherwise serves what is built (ready in about a second).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const STAMP = join(ROOT, 'dist', '.build-stamp');

const INPUTS = [
  'src',
  'generated',
  'clients/typescript/src',
  'clients/typescript/tsconfig.json',
  'clients/typescript/tsconfig.package.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'knexfile.ts',
  'package.json',
  'package-lock.json',
  'scripts/copy-web-assets.mjs',
  'scripts/build-client-esm.mjs',
  'scripts/build-stamp.mjs',
];

function* files(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isDirectory()) {
    yield [relative(ROOT, path), st.size, st.mtimeMs];
    return;
  }
  for (const entry of readdirSync(path).sort()) yield* files(join(path, entry));
}

/** The fingerprint of the build's inputs as they are now. */
export function fingerprint() {
  const hash = createHash('sha256');
  for (const input of INPUTS) for (const [file, size, mtime] of files(join(ROOT, input))) hash.update(`${file}\0${size}\0${mtime}\n`);
  return hash.digest('hex');
}

/** Whether dist/ was built from the inputs as they are now. */
export function built() {
  try {
    return readFileSync(STAMP, 'utf8').trim() === fingerprint();
  } catch {
    return false;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--write') writeFileSync(STAMP, `${fingerprint()}\n`);
