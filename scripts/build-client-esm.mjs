#!/usr/bin/env node
// The ESM face of the package's `windsock/client` entry (npm run build). tsc builds the client
// once, as CommonJS (dist/clients/typescript/src/index.js, with index.d.ts); this writes
// index.mjs, which re-exports that module's names one by one (so `import { createClient } from
// 'windsock/client'` works in Node's ESM and bundlers, without relying on Node guessing a
// CommonJS module's names), and index.d.mts, its declarations. One build, so `instanceof
// WindsockApiError` holds whichever way a consumer loads it.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'clients', 'typescript', 'src');
const names = Object.keys(createRequire(import.meta.url)(join(dir, 'index.js')))
  .filter((n) => n !== '__esModule')
  .sort();
if (!names.includes('createClient')) throw new Error(`dist/clients/typescript/src/index.js exports no createClient (found: ${names.join(', ')})`);
const header = '// Written by scripts/build-client-esm.mjs (npm run build): the ESM entry of windsock/client.\n';
writeFileSync(join(dir, 'index.mjs'), `${header}import client from './index.js';\n\nexport const { ${names.join(', ')} } = client;\n`);
writeFileSync(join(dir, 'index.d.mts'), `${header}export * from './index.js';\n`);
