/**
 * The fault tests run the compiled service (`dist/`), as it is deployed: compile first, then
 * decide on the stores as the normal suite does.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import globalSetup from '../support/global-setup';

export default async function faultsSetup(): Promise<void> {
  const root = path.resolve(__dirname, '../..');
  // From an empty dist/, as `npm run build` does: a file left from a moved module would shadow it.
  fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'copy-web-assets.mjs')], { cwd: root, stdio: 'inherit' });
  await globalSetup();
}
