/**
 * A command step's `plugins`, normalised to the list form Buildkite documents (each item one
 * `{"<source>#<version>": settings}`; a bare name has null settings; the deprecated mapping
 * form becomes one item per key, and so does an item of several keys, as the agent's own parser
 * reads one: the docs' `buildkite-agent lock` example indents a plugin's settings beside its
 * name). The agent reads them from the job's `BUILDKITE_PLUGINS`
 * (JSON), which src/builds/jobs/plan.ts sets. No HTTP, no database.
 */
import { define, mapping, type ProblemReporter } from './problems';
import { text, type FoundProperty } from './property-readers';
import type { ConfigValue } from './value-tree';

export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };
export type Plugin = Record<string, JsonValue>;

const MAX_PLUGINS = 100;
const MAX_SOURCE = 1000;

export function parsePlugins(reporter: ProblemReporter, found: FoundProperty | undefined): Plugin[] | undefined {
  if (!found) return undefined;
  const [path, v] = found;
  const plugins: Plugin[] = [];
  const add = (at: string, source: string, settings: ConfigValue | undefined, where: ConfigValue) => {
    if (source.trim() === '' || source.length > MAX_SOURCE) return reporter.fail(at, 'must name a plugin', where);
    const plugin: Plugin = {};
    Object.defineProperty(plugin, source, { value: settings === undefined ? null : toJson(settings), enumerable: true, writable: true, configurable: true });
    plugins.push(plugin);
  };
  if (v.kind === 'map') {
    if (v.keys.length > MAX_PLUGINS) return (reporter.fail(path, `must have at most ${MAX_PLUGINS} plugins`, v), undefined);
    for (const source of v.keys) add(path, source, v.get(source), v);
  } else if (v.kind === 'list') {
    if (v.items.length > MAX_PLUGINS) return (reporter.fail(path, `must have at most ${MAX_PLUGINS} plugins`, v), undefined);
    v.items.forEach((item, i) => {
      const at = `${path}[${i}]`;
      const name = text(item);
      if (name !== undefined) return add(at, name, undefined, item);
      if (item.kind === 'map' && item.keys.length > 0) return item.keys.forEach((source) => add(at, source, item.get(source), item));
      reporter.fail(at, `must be a plugin name, or ${mapping(reporter)} of one plugin name to its settings`, item);
    });
  } else {
    return (reporter.fail(path, 'must be a list or a mapping', v), undefined);
  }
  if (plugins.length > MAX_PLUGINS) return (reporter.fail(path, `must have at most ${MAX_PLUGINS} plugins`, v), undefined);
  return plugins;
}

/** Settings as plain JSON: numbers and booleans keep their type, as the agent passes them on. */
function toJson(v: ConfigValue): JsonValue {
  switch (v.kind) {
    case 'str':
      return v.value;
    case 'num':
    case 'bool':
      return v.value;
    case 'list':
      return v.items.map(toJson);
    case 'map': {
      const out: Record<string, JsonValue> = {};
      for (const k of v.keys) define(out, k, toJson(v.get(k) ?? { kind: 'null', line: v.line }));
      return out;
    }
    default:
      return null;
  }
}
