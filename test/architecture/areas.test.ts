/**
 * The rule docs/architecture.md states and lint cannot: no cycles between areas. Every import in
 * src/ (type-only ones too: a type is a dependency) is an edge from the importing file's area (its
 * folder under src/, or the file itself for the composition root's src/*.ts) to the imported
 * file's; the graph of areas must have no cycle.
 */
import fs from 'node:fs';
import path from 'node:path';

const SRC = path.resolve(__dirname, '../../src');
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)'(\.{1,2}\/[^']+)'/g;

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The area of a path under src/: its first folder, or the root file's own name. Null: outside src/ (generated/). */
function areaOf(file: string): string | null {
  const rel = path.relative(SRC, file);
  if (rel.startsWith('..')) return null;
  const [first, ...rest] = rel.split(path.sep);
  return rest.length ? first! : path.basename(first!, '.ts');
}

function areaGraph(): { edges: Map<string, Set<string>>; why: Map<string, string> } {
  const edges = new Map<string, Set<string>>();
  const why = new Map<string, string>();
  for (const file of sources(SRC)) {
    const from = areaOf(file)!;
    if (!edges.has(from)) edges.set(from, new Set());
    for (const [, specifier] of fs.readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const to = areaOf(path.resolve(path.dirname(file), specifier!));
      if (to === null || to === from) continue;
      edges.get(from)!.add(to);
      if (!why.has(`${from}->${to}`)) why.set(`${from}->${to}`, `${path.relative(SRC, file)} imports ${specifier}`);
    }
  }
  return { edges, why };
}

/** The first cycle found by depth-first search, as a list of areas ending where it began; null if none. */
function findCycle(edges: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (a: string): string[] | null => {
    state.set(a, 'open');
    stack.push(a);
    for (const b of edges.get(a) ?? []) {
      if (state.get(b) === 'open') return [...stack.slice(stack.indexOf(b)), b];
      if (!state.has(b)) {
        const found = visit(b);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(a, 'done');
    return null;
  };
  for (const a of [...edges.keys()].sort()) {
    if (state.has(a)) continue;
    const found = visit(a);
    if (found) return found;
  }
  return null;
}

describe('areas', () => {
  const { edges, why } = areaGraph();

  it('import each other without a cycle', () => {
    const cycle = findCycle(edges);
    const explained = cycle?.slice(1).map((to, i) => why.get(`${cycle[i]}->${to}`));
    expect(explained ?? []).toEqual([]);
  });

  it('are seen by the check: builds uses agents, and agents reach nothing of builds', () => {
    expect(edges.get('builds')).toContain('agents');
    expect(edges.get('agent-api')).toContain('builds');
    expect(edges.get('agents')).not.toContain('builds');
  });

  it('would report a cycle', () => {
    const withCycle = new Map(edges);
    withCycle.set('agents', new Set([...(edges.get('agents') ?? []), 'builds']));
    expect(findCycle(withCycle)).toEqual(expect.arrayContaining(['agents', 'builds']));
  });
});
