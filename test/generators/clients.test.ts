/**
 * Generated clients, proven (issue 28): each generator of cells.ts generates a client from the
 * document a live Windsock SERVES (`/openapi-3.0.json` or `/openapi.json`), the client compiles
 * with the machine's tools unpatched, and it runs the smoke scenario against that Windsock: list
 * pipelines, create a pipeline and a build, read it back, page through builds by `Link`, read a
 * 422 and a 404 as typed errors. The live server validates every response against the contract.
 *
 * The generator x language table goes to docs/generators.md (written on a run where no cell was
 * skipped); expected.json holds the cells that must pass, so a regression fails here. Outside CI a
 * missing system tool skips its cells with one line naming the tool and the Debian package; with
 * CI=true it fails. Generation runs two at a time (they are CPU-bound: the machine has 2 cores).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { databases } from '../support/context';
import { validatingProxy, type ValidatingProxy } from '../support/prism';
import { givenSdkData, liveWindsock, type LiveWindsock, type SdkData } from '../sdk/support';
import { CELLS, exec, GO_ENV, type Cell } from './cells';
import expected from './expected.json';

type Stage = 'generates' | 'compiles' | 'scenario';
type Outcome = 'yes' | 'no' | 'skipped';
interface Result {
  cell: Cell;
  stages: Record<Stage, Outcome>;
  note?: string;
}

interface Report {
  listed: string[];
  created: string;
  build: { number: number; state: string };
  got: number;
  pages: number[][];
  invalid: { status: number; message: string; fields: string[] };
  missing: { status: number; message: string };
}

const STAGES: Stage[] = ['generates', 'compiles', 'scenario'];
const ROOT = path.resolve(__dirname, '..', '..');
const ON_CI = process.env.CI === 'true';

let live: LiveWindsock;
/** Prism in front of `live`, one per served document: every scenario goes through the one its generator read. */
const proxies = new Map<Cell['document'], ValidatingProxy>();
let data: SdkData;
let work: string;
const results = new Map<string, Result>();
const generated = new Map<string, Promise<void>>();
const missingTools = new Map<string, string>();

/** Runs `tasks` at most `limit` at a time. */
function limited(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>) => {
    while (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-generators-'));
  live = await liveWindsock(databases[0]!);
  data = await givenSdkData(live.ctx);
  const documents: Record<string, string> = {};
  for (const name of ['openapi-3.0.json', 'openapi.json']) {
    const res = await fetch(`${live.url}/${name}`);
    if (res.status !== 200) throw new Error(`GET /${name}: ${res.status}`);
    documents[name] = path.join(work, name);
    fs.writeFileSync(documents[name], await res.text());
  }
  await Promise.all((['openapi-3.0.json', 'openapi.json'] as const).map(async (name) => proxies.set(name, await validatingProxy(documents[name]!, live.url))));
  for (const cell of CELLS) {
    for (const tool of cell.tools) {
      if (missingTools.has(tool.name)) continue;
      try {
        await exec(tool.check[0], tool.check.slice(1), { env: GO_ENV });
      } catch {
        missingTools.set(tool.name, tool.debian);
      }
    }
  }
  const slot = limited(2);
  for (const cell of CELLS) {
    if (cell.tools.some((t) => missingTools.has(t.name))) continue;
    const dir = path.join(work, cell.id);
    fs.mkdirSync(dir);
    const run = slot(() => cell.generate(dir, documents[cell.document]!, live.url));
    run.catch(() => undefined); // awaited by the cell's test
    generated.set(cell.id, run);
  }
}, 240_000);

afterAll(async () => {
  await Promise.allSettled(generated.values());
  await Promise.allSettled([...proxies.values()].map((p) => p.close()));
  await live?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('clients generated from the served documents', () => {
  it.each(CELLS.map((c) => [c.id, c] as const))(
    '%s: generates, compiles and runs the smoke scenario',
    async (id, cell) => {
      const stages: Record<Stage, Outcome> = { generates: 'skipped', compiles: 'skipped', scenario: 'skipped' };
      const result: Result = { cell, stages };
      results.set(id, result);
      const missing = cell.tools.filter((t) => missingTools.has(t.name));
      if (missing.length > 0) {
        const line = `${id}: skipped, ${missing.map((t) => `${t.name} is not installed (Debian: apt-get install ${t.debian})`).join('; ')}`;
        if (ON_CI) throw new Error(line);
        console.warn(line);
        return;
      }
      const dir = path.join(work, id);
      let stage: Stage = 'generates';
      try {
        await generated.get(id);
        stages.generates = 'yes';
        stage = 'compiles';
        await cell.compile(dir);
        stages.compiles = 'yes';
        stage = 'scenario';
        const out = await cell.run(dir, {
          WINDSOCK_URL: proxies.get(cell.document)!.url,
          WINDSOCK_TOKEN: data.token,
          WINDSOCK_ORG: data.org,
          WINDSOCK_PIPELINE: data.pipeline,
          WINDSOCK_NEW_PIPELINE: `Generated ${id}`,
        });
        checkReport(JSON.parse(out) as Report, id);
        stages.scenario = 'yes';
      } catch (err) {
        // This stage failed, and the ones after it were not reached.
        for (const later of STAGES.slice(STAGES.indexOf(stage))) stages[later] = 'no';
        result.note = firstLine(err);
        if (mustPass(id, stage)) throw err;
        console.warn(`${id}: ${stage} fails, as expected.json records: ${result.note}`);
      }
    },
    600_000,
  );

  it('an independent validator (Prism, in front of the server) found no answer that breaks the document its client read', async () => {
    for (const [name, proxy] of proxies) {
      await proxy.close();
      expect({ [name]: proxy.responseViolations() }).toEqual({ [name]: [] });
      // The scenarios' one request meant to be refused (the build with an empty branch, for the 422) is the only one Prism flags.
      expect({ [name]: proxy.requestViolations().filter((v) => !/^request\.body\.branch\b/.test(v)) }).toEqual({ [name]: [] });
    }
  });

  it('writes the table to docs/generators.md; no cell does worse than expected.json', () => {
    const regressions: string[] = [];
    for (const [id, result] of results)
      for (const stage of STAGES) if (mustPass(id, stage) && result.stages[stage] === 'no') regressions.push(`${id} ${stage}`);
    expect(regressions).toEqual([]);
    expect([...results.keys()].sort()).toEqual(Object.keys(expected).sort());
    const skipped = [...results.values()].some((r) => STAGES.some((s) => r.stages[s] === 'skipped'));
    if (!skipped) fs.writeFileSync(path.join(ROOT, 'docs', 'generators.md'), table([...results.values()]));
  });
});

function mustPass(id: string, stage: Stage): boolean {
  const cell = (expected as Record<string, Partial<Record<Stage, string>>>)[id];
  return cell?.[stage] === 'yes';
}

function firstLine(err: unknown): string {
  // The cause, not the command: an exception's line, a compiler's first error, a missing package.
  const lines = (err instanceof Error ? err.message : String(err)).split('\n').map((l) => l.trim());
  return lines.find((l) => /^\w*Error:|error TS\d+|cannot find package/.test(l)) ?? lines.find((l) => /error|cannot|undefined|refuse/i.test(l)) ?? lines[0]!;
}

function checkReport(report: Report, id: string): void {
  expect(report.listed).toEqual(expect.arrayContaining(data.pipelines));
  expect(report.created).toBe(`generated-${id}`);
  expect(report.build).toEqual({ number: 1, state: 'scheduled' });
  expect(report.got).toBe(1);
  // The pipeline's five builds, newest first, two a page: each `Link: rel="next"` followed to the end.
  expect(report.pages).toEqual([[5, 4], [3, 2], [1]]);
  expect(report.invalid).toEqual({ status: 422, message: 'Validation Failed', fields: ['branch'] });
  expect(report.missing.status).toBe(404);
  expect(report.missing.message).toMatch(/^No build found/);
}

function table(rows: Result[]): string {
  const mark = (o: Outcome) => (o === 'yes' ? 'yes' : o === 'no' ? '**no**' : 'skipped');
  const lines = [
    '# Generated clients',
    '',
    '<!-- Written by test/generators/clients.test.ts; edit that test (or test/generators/expected.json), not this file. -->',
    '',
    "Windsock's contract is meant to be read by client generators. CI proves it for each generator",
    'below: the test starts Windsock on 127.0.0.1, downloads the document the server serves',
    '(`/openapi-3.0.json`, the OpenAPI 3.0.3 rendering, for generators that read 3.0 only;',
    '`/openapi.json`, the OpenAPI 3.1 document, for the others), generates a client, compiles it',
    "unpatched with the machine's tools (Debian's `python3` and `golang-go` with Debian's Go",
    'packages in GOPATH mode, no module proxy; `tsc` in strict mode), and runs one scenario with it',
    'against that server: list pipelines, create a pipeline, create a build, read it back, page',
    'through builds following `Link: rel="next"`, and read a 422 and a 404 as typed errors.',
    '',
    "Every scenario's requests go through an independent validator: Stoplight's Prism",
    '(`@stoplight/prism-cli` from npm) in proxy mode, in front of the server, with the document the',
    "client was generated from. Prism checks every answer with its own validator (not the server's",
    'express-openapi-validator); the test fails on any answer it finds at odds with either document.',
    '',
    "The go client's one import that Debian does not package, `github.com/antihax/optional`, is",
    "the test's own package of that path (`test/generators/go-optional/`: the optional-value types",
    'the client uses), put in the GOPATH beside the client; the generated code is not edited.',
    '',
    'CI fails when a cell that `test/generators/expected.json` marks `yes` stops passing.',
    '',
    '| Generator | Language | Document | Generates | Compiles | Scenario passes | Note |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.cell.generator} | ${r.cell.language} | \`/${r.cell.document}\` | ${mark(r.stages.generates)} | ${mark(r.stages.compiles)} | ${mark(r.stages.scenario)} | ${(r.note ?? '').replace(/\|/g, '\\|').slice(0, 300)} |`,
    ),
    '',
    "OpenAPI Generator 4.3.1's java generator is not a cell: it fails on the contract's step unions",
    '(native library) or needs Java libraries Debian does not package (okhttp-gson); see',
    '[openapi.md](openapi.md).',
    '',
    "Each client takes the server's URL as its base: the documents' `servers` entry is",
    '`{scheme}://{host}` with the defaults `http` and `127.0.0.1:8080` (`windsock serve`).',
    '',
    'Run it: `npx jest test/generators` (Java, Python 3 and Go from Debian; see `.ci/run`).',
    '',
  ];
  return lines.join('\n');
}
