/**
 * One transport for every outgoing connection (src/security/outbound.ts): the lint rule
 * (eslint.config.mjs, `oneTransport`) refuses any other way out of the server under src/, and a
 * scan of src/ finds none outside the exempt files. No database, no network.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/**
 * The rule's messages for each `[code, file]`, as if the code were that file: ESLint's API in a
 * child node process (jest's module system cannot load the config, an ES module), once for all.
 */
function lintAll(cases: [string, string][]): string[][] {
  const script = `
    const { ESLint } = require('eslint');
    const path = require('node:path');
    const cases = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = [];
      for (const [code, file] of cases) {
        const [result] = await eslint.lintText(code, { filePath: path.join(process.cwd(), file) });
        out.push(result.messages.filter((m) => m.ruleId === 'no-restricted-syntax' || m.ruleId === 'no-restricted-imports').map((m) => m.message));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify(cases)], { cwd: root, encoding: 'utf8' })) as string[][];
}

const WAYS_OUT: [string, string][] = [
  ['fetch', 'export async function f(u: string) { return fetch(u); }'],
  ['globalThis.fetch', 'export async function f(u: string) { return globalThis.fetch(u); }'],
  ['http.request', "import http from 'node:http';\nexport const r = http.request('http://127.0.0.1/');"],
  ['https.get', "import https from 'node:https';\nexport const r = https.get('https://127.0.0.1/');"],
  ['a named request import', "import { request } from 'node:http';\nexport const r = request;"],
  ['net.connect', "import net from 'node:net';\nexport const s = net.connect(80, '127.0.0.1');"],
  ['tls.connect', "import tls from 'node:tls';\nexport const s = tls.connect(443, '127.0.0.1');"],
  ['undici', "import { request } from 'undici';\nexport const r = request;"],
  ['axios', "import axios from 'axios';\nexport const a = axios;"],
  ['the OTLP HTTP exporter', "import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';\nexport const e = OTLPTraceExporter;"],
  [
    'the OTLP HTTP delegate',
    "import { createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base';\nexport const d = createOtlpHttpExportDelegate;",
  ],
  ['octokit with its own client', "import { Octokit } from '@octokit/rest';\nexport const o = new Octokit({ auth: 't' });"],
  ['the S3 client with its own handler', "import { S3Client } from '@aws-sdk/client-s3';\nexport const c = new S3Client({ region: 'us-east-1' });"],
  ["the AWS SDK's Node handler", "import { NodeHttpHandler } from '@smithy/node-http-handler';\nexport const h = new NodeHttpHandler();"],
];

const OCTOKIT_OVER_TRANSPORT =
  "import { Octokit } from '@octokit/rest';\ndeclare const f: typeof fetch;\nexport const o = new Octokit({ request: { fetch: f } });";

describe('one transport for every outgoing connection', () => {
  let results: string[][];
  beforeAll(() => {
    results = lintAll([
      ...WAYS_OUT.map(([, code]): [string, string] => [code, 'src/notifications/providers/example.ts']),
      [OCTOKIT_OVER_TRANSPORT, 'src/notifications/commit-status/example.ts'],
      ["import http from 'node:http';\nexport const r = http.request('http://x/');", 'src/security/outbound.ts'],
    ]);
  }, 120_000);

  it.each(WAYS_OUT.map(([name], i) => [name, i] as const))('the lint rule refuses %s outside the transport', (_name, i) => {
    expect(results[i]!.some((m) => /transport|OTLP|Octokit|AWS SDK/.test(m))).toBe(true);
  });

  it('lets octokit be built over the transport, and the transport itself open connections', () => {
    expect(results[WAYS_OUT.length]).toEqual([]);
    expect(results[WAYS_OUT.length + 1]).toEqual([]);
  });

  it('finds no other way out in src/ than the transport (a scan, besides the lint run)', () => {
    const exempt = [
      /^src\/security\/outbound\.ts$/,
      /^src\/web\/assets\//,
      /^src\/cli\/agent\.ts$/,
      /^src\/cli\/buildkite-agent-shim\.ts$/,
      /^src\/cli\/shim\//,
    ];
    const patterns = [
      /(^|[^.\w])fetch\(/,
      /\bhttps?\.(request|get)\(/,
      /\b(net|tls)\.(connect|createConnection)\(/,
      /from '(node:)?undici'/,
      /new Octokit\(/,
      /new S3Client\(/,
    ];
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const rel = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(rel);
        else if (/\.(ts|js|mjs)$/.test(entry.name) && !exempt.some((e) => e.test(rel))) {
          const text = fs.readFileSync(path.join(root, rel), 'utf8');
          for (const p of patterns) if (p.test(text)) offenders.push(`${rel}: ${p}`);
        }
      }
    };
    walk('src');
    // Octokit is built in one place, over the transport's fetch (fetchOver); the S3 client in one, over the transport's stream.
    expect(offenders.sort()).toEqual(['src/artifacts/s3-storage.ts: /new S3Client\\(/', 'src/notifications/commit-status/github.ts: /new Octokit\\(/']);
    expect(fs.readFileSync(path.join(root, 'src/artifacts/s3-storage.ts'), 'utf8')).toMatch(/requestHandler: new OutboundS3Handler\(outbound, storeHost\)/);
    expect(fs.readFileSync(path.join(root, 'src/notifications/commit-status/github.ts'), 'utf8')).toMatch(/request: \{ fetch: fetchOver\(http, seen\) \}/);
  });
});
