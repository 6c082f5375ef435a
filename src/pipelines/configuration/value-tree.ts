import { MAX_DEPTH, MAX_VALUES } from './limits';

// ---------------------------------------------------------------------------------------------
// The neutral value tree. Maps are read lazily so that parts no rule looks at (plugin settings,
// top-level anchor holders) cost nothing.

export type Line = number | undefined;
export type VMap = { t: 'map'; keys: string[]; get(key: string): V | undefined; line: Line };
export type VList = { t: 'list'; items: V[]; line: Line };
export type V =
  | { t: 'null'; line: Line }
  | { t: 'str'; v: string; line: Line }
  // `text` is the number or boolean as written, so `commit: 0123456` keeps its leading zero.
  | { t: 'num'; v: number; text: string; line: Line }
  | { t: 'bool'; v: boolean; text: string; line: Line }
  | VList
  | VMap
  | { t: 'other'; line: Line };

export class TooLarge extends Error {}

export class Budget {
  private left = MAX_VALUES;
  spend(): void {
    if (--this.left < 0) throw new TooLarge();
  }
}

export function lazyMap(keys: string[], line: Line, read: (key: string) => V | undefined): VMap {
  const memo = new Map<string, V>();
  return {
    t: 'map',
    keys,
    line,
    get(key) {
      let v = memo.get(key);
      if (v === undefined) {
        v = read(key);
        if (v !== undefined) memo.set(key, v);
      }
      return v;
    },
  };
}

export function fromJson(x: unknown, depth: number, budget: Budget): V {
  budget.spend();
  const line = undefined;
  if (x === null) return { t: 'null', line };
  if (typeof x === 'string') return { t: 'str', v: x, line };
  if (typeof x === 'number') return { t: 'num', v: x, text: String(x), line };
  if (typeof x === 'boolean') return { t: 'bool', v: x, text: String(x), line };
  if (typeof x !== 'object' || depth >= MAX_DEPTH) return { t: 'other', line };
  if (Array.isArray(x)) {
    const items: V[] = [];
    for (let i = 0; i < x.length; i++) items.push(fromJson(x[i], depth + 1, budget));
    return { t: 'list', items, line };
  }
  const obj = x as Record<string, unknown>;
  return lazyMap(Object.keys(obj), line, (key) =>
    Object.hasOwn(obj, key) ? fromJson(obj[key], depth + 1, budget) : undefined,
  );
}
