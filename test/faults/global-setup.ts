/**
 * The fault tests run the compiled service (`dist/`), as it is deployed: compile first (unless
 * `npm run build` already built dist/ from the sources as they are), then decide on the stores
 * as the normal suite does.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { builtFromThisTree } from '../support/build-stamp';
import globalSetup from '../support/global-setup';

export default async function faultsSetup(): Promise<void> {
  const root = path.resolve(__dirname, '../..');
  if (builtFromThisTree(root)) {
    // `npm run build` (npm ci's prepare, npm pack's) made dist/ from the sources as they are now,
    // from an empty dist/ too: compiling again would give the same files.
    process.stderr.write('\nfault tests: dist/ is built from the sources as they are (dist/.build-stamp): not compiled again\n');
  } else {
    // From an empty dist/, as `npm run build` does: a file left from a moved module would shadow it.
    fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
    execFileSync(process.execPath, [path.join(root, 'scripts', 'copy-web-assets.mjs')], { cwd: root, stdio: 'inherit' });
  }
  await globalSetup();
}
