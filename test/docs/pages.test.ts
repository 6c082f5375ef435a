/**
 * The README and the docs/ pages it leads to (issue 29: a README a newcomer reads in ten
 * minutes; issue 28: README and behaviour agree). The README stays short and every page is
 * reachable from it by links that resolve; the pages that describe something the code defines
 * are checked against that code: docs/settings.md against the variables src/config.ts reads,
 * docs/cli.md against `windsock --help`, docs/development.md against openapi/paths/. Numbers the
 * README states come from the project (package.json) or are tested elsewhere (exit codes:
 * test/faults/start.test.ts; the curl lines: curl-examples.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'examples' ? [] : markdownFiles(rel);
    return e.name.endsWith('.md') ? [rel] : [];
  });
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*]/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The relative links of a Markdown file (outside code blocks), resolved from its directory. */
function links(file: string): { target: string; anchor?: string; raw: string }[] {
  const text = read(file).replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((l) => !/^(https?:|mailto:)/.test(l))
    .map((raw) => {
      const [p, anchor] = raw.split('#');
      return { raw, anchor, target: p ? path.posix.normalize(path.posix.join(path.posix.dirname(file), p)) : file };
    });
}

const pages = ['README.md', ...markdownFiles('docs')];

describe('the README', () => {
  it('is short enough to read in ten minutes: under 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThan(300);
  });

  it('links only to files and headings that exist, on every page', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const { target, anchor, raw } of links(page)) {
        if (!fs.existsSync(path.join(ROOT, target))) broken.push(`${page}: ${raw}`);
        else if (anchor && target.endsWith('.md')) {
          const headings = [...read(target).matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1]!));
          if (!headings.includes(anchor)) broken.push(`${page}: ${raw} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('leads to every page under docs/', () => {
    const seen = new Set<string>(['README.md']);
    const queue = ['README.md'];
    while (queue.length) {
      for (const { target } of links(queue.shift()!)) {
        if (target.endsWith('.md') && !seen.has(target) && fs.existsSync(path.join(ROOT, target))) {
          seen.add(target);
          queue.push(target);
        }
      }
    }
    expect(markdownFiles('docs').filter((p) => !seen.has(p))).toEqual([]);
  });

  it('states the version the package has and the Node.js it needs', () => {
    const pkg = JSON.parse(read('package.json')) as { version: string; engines: { node: string } };
    const readme = read('README.md');
    expect([...readme.matchAll(/windsock-(\d+\.\d+\.\d+)\.tgz/g)].map((m) => m[1])).toEqual(expect.arrayContaining([pkg.version]));
    expect(new Set([...readme.matchAll(/windsock-(\d+\.\d+\.\d+)\.tgz/g)].map((m) => m[1]))).toEqual(new Set([pkg.version]));
    expect(pkg.engines.node).toBe(`>=${/Node\.js 20 \(≥ (20\.\d+)\)/.exec(readme)![1]}`);
  });
});

describe('docs/settings.md', () => {
  it('lists exactly the variables src/config.ts reads', () => {
    const config = read('src/config.ts');
    const read_ = new Set([...config.matchAll(/\benv\.([A-Z][A-Z0-9_]*)|\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1] ?? m[2]!));
    // A row may name several (`GITHUB_API_URL`, `GITHUB_TOKEN`): every name in its first cell.
    const firstCells = [...read('docs/settings.md').matchAll(/^\| (`[A-Z].*?) \|/gm)].map((m) => m[1]!);
    const documented = new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)));
    expect(read_.size).toBeGreaterThan(30);
    expect([...read_].filter((v) => !documented.has(v)).sort()).toEqual([]);
    expect([...documented].filter((v) => !read_.has(v)).sort()).toEqual([]);
  });
});

/** `windsock <args> --help`, as printed. */
async function help(...args: string[]): Promise<string> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  expect(await main([...args, '--help'], out, new PassThrough())).toBe(0);
  return text;
}

/** The `Commands:` of a help text: each command's name (`help` left out). */
const commandsOf = (text: string) =>
  [...(text.split('\nCommands:\n')[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');

describe('docs/cli.md', () => {
  it('has a row for every command `windsock --help` lists, with each of its options', async () => {
    const doc = read('docs/cli.md');
    const rows = [...doc.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]!);
    const problems: string[] = [];
    const top = commandsOf(await help());
    expect(top).toEqual(expect.arrayContaining(['serve', 'migrate', 'org', 'token', 'agent']));
    for (const cmd of top) {
      const subs = commandsOf(await help(cmd));
      for (const leaf of subs.length ? subs.map((s) => [cmd, s]) : [[cmd]]) {
        // `service delete|enable|disable ...` is one row for three commands.
        const row = rows.find((r) => {
          const [name, sub] = r.replace(/\\\|/g, '|').split(' ');
          return name === leaf[0] && (leaf.length === 1 || sub!.split('|').includes(leaf[1]!));
        });
        if (!row) {
          problems.push(`no row for \`${leaf.join(' ')}\``);
          continue;
        }
        const options = [...(await help(...leaf)).matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((o) => o !== '--help');
        for (const option of options) if (!row.includes(option)) problems.push(`\`${leaf.join(' ')}\`: ${option} is not in its row`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('docs/development.md', () => {
  it("lists every file of openapi/paths/ in the spec's table", () => {
    const doc = read('docs/development.md');
    const files = fs.readdirSync(path.join(ROOT, 'openapi/paths')).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(20);
    expect(files.filter((f) => !doc.includes(`\`openapi/paths/${f}\``))).toEqual([]);
  });
});
