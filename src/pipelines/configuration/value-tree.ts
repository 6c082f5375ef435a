/**
 * The neutral value tree both inputs are read into, keeping YAML line numbers. Maps are read
 * lazily so that parts no rule looks at (plugin settings, top-level anchor holders) cost nothing.
 */
import { MAX_DEPTH, MAX_VALUES } from './limits';
import { isRecord } from '../../core/guards';

export type SourceLine = number | undefined;
export type ConfigMap = { kind: 'map'; keys: string[]; get(key: string): ConfigValue | undefined; line: SourceLine };
export type ConfigList = { kind: 'list'; items: ConfigValue[]; line: SourceLine };
export type ConfigValue =
  | { kind: 'null'; line: SourceLine }
  | { kind: 'str'; value: string; line: SourceLine }
  // `text` is the number or boolean as written, so `commit: 0123456` keeps its leading zero.
  | { kind: 'num'; value: number; text: string; line: SourceLine }
  | { kind: 'bool'; value: boolean; text: string; line: SourceLine }
  | ConfigList
  | ConfigMap
  | { kind: 'other'; line: SourceLine };

export class TooLargeError extends Error {}

export class ValueBudget {
  private left = MAX_VALUES;
  spend(): void {
    if (--this.left < 0) throw new TooLargeError();
  }
}

export function lazyConfigMap(keys: string[], line: SourceLine, read: (key: string) => ConfigValue | undefined): ConfigMap {
  const memo = new Map<string, ConfigValue>();
  return {
    kind: 'map',
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

export function valueFromJson(x: unknown, depth: number, budget: ValueBudget): ConfigValue {
  budget.spend();
  const line = undefined;
  if (x === null) return { kind: 'null', line };
  if (typeof x === 'string') return { kind: 'str', value: x, line };
  if (typeof x === 'number') return { kind: 'num', value: x, text: String(x), line };
  if (typeof x === 'boolean') return { kind: 'bool', value: x, text: String(x), line };
  if (typeof x !== 'object' || depth >= MAX_DEPTH) return { kind: 'other', line };
  if (Array.isArray(x)) {
    const items: ConfigValue[] = [];
    for (let i = 0; i < x.length; i++) items.push(valueFromJson(x[i], depth + 1, budget));
    return { kind: 'list', items, line };
  }
  if (!isRecord(x)) return { kind: 'other', line };
  const obj = x;
  return lazyConfigMap(Object.keys(obj), line, (key) => (Object.hasOwn(obj, key) ? valueFromJson(obj[key], depth + 1, budget) : undefined));
}
