import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** Whether dist/.build-stamp matches the build's inputs as they are (scripts/build-stamp.mjs, the check `npm start` makes). */
export function builtFromThisTree(root: string): boolean {
  const check = `import { built } from ${JSON.stringify(path.join(root, 'scripts', 'build-stamp.mjs'))}; process.exit(built() ? 0 : 1);`;
  try {
    execFileSync(process.execPath, ['--input-type=module', '-e', check], { cwd: root, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
