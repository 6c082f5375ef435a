#!/usr/bin/env node
// The web interface's assets (src/web/assets: CSS and the log script) are not TypeScript: every
// build of dist/ (npm run build, the fault tests' compile, bench:web) copies them beside the
// compiled src/web, where the service reads them.
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
cpSync(join(root, 'src', 'web', 'assets'), join(root, 'dist', 'src', 'web', 'assets'), { recursive: true });
