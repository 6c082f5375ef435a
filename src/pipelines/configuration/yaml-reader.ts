/**
 * Reads a parsed YAML document into the value tree: aliases (bounded), `<<` merge keys and
 * duplicate keys, each checked in one linear pass rather than by the yaml library's `toJS`.
 */
import { isAlias, isMap, isNode, isPair, isScalar, isSeq, type Document, type LineCounter, type Node as YamlNode, type Scalar, type YAMLMap } from 'yaml';
import { ValidationError } from '../../core/errors';
import { fieldOf } from '../../core/guards';
import { MAX_ALIAS_EXPANSIONS, MAX_DEPTH } from './limits';
import { lazyConfigMap, type ValueBudget, type SourceLine, type ConfigValue, type ConfigMap } from './value-tree';

export class YamlReader {
  /** Alias node -> the node it names, resolved once up front. */
  private readonly targets = new Map<unknown, YamlNode>();
  private expansions = 0;

  constructor(
    doc: Document,
    private readonly lines: LineCounter,
    private readonly budget: ValueBudget,
  ) {
    this.vet(doc.contents);
  }

  /**
   * One linear pass over the document for what the library only checks in `toJS` (or, for
   * duplicate keys, checks quadratically): aliases without an anchor, aliases inside the
   * node they name, and duplicate keys.
   */
  private vet(root: unknown): void {
    const anchors = new Map<string, YamlNode>();
    const stack: unknown[] = [root];
    while (stack.length > 0) {
      const node = stack.pop();
      if (isPair(node)) {
        stack.push(node.value, node.key);
        continue;
      }
      if (!isNode(node)) continue;
      if (isAlias(node)) {
        const target = anchors.get(node.source);
        if (target === undefined) throw this.invalid(node, `alias *${node.source} has no anchor before it`);
        const [start, end] = target.range ?? [0, 0];
        const at = node.range?.[0] ?? 0;
        if (at >= start && at < end) throw this.invalid(node, `alias *${node.source} is inside the anchor it names`);
        this.targets.set(node, target);
        continue;
      }
      // An anchor names the closest node before the alias, so they are recorded in document
      // order (the stack yields nodes in the order they start).
      if (node.anchor) anchors.set(node.anchor, node);
      if (isMap(node)) {
        const seen = new Set<string>();
        for (const pair of node.items) {
          if (isMergeKey(pair.key) || !isScalar(pair.key)) continue;
          const key = keyText(pair.key);
          if (seen.has(key)) throw this.invalid(pair.key, 'Map keys must be unique');
          seen.add(key);
        }
      }
      if (isMap(node) || isSeq(node)) for (let i = node.items.length - 1; i >= 0; i--) stack.push(node.items[i]);
    }
  }

  private invalid(node: YamlNode, message: string): ValidationError {
    const { line, col } = this.lines.linePos(node.range?.[0] ?? 0);
    return yamlError(`is not a valid YAML document: line ${line}, column ${col}: ${message}`);
  }

  line(node: unknown): SourceLine {
    const range = fieldOf(node, 'range');
    return Array.isArray(range) && typeof range[0] === 'number' ? this.lines.linePos(range[0]).line : undefined;
  }

  /** `line` is where the value is used (the key of its pair, or the alias), not where an
   * anchored value was first written: errors should point at what the user can change. */
  value(node: unknown, line: SourceLine, depth: number): ConfigValue {
    this.budget.spend();
    let target = node;
    if (isAlias(node)) {
      if (++this.expansions > MAX_ALIAS_EXPANSIONS) {
        throw this.invalid(node, `aliases are expanded more than ${MAX_ALIAS_EXPANSIONS} times`);
      }
      target = this.targets.get(node);
    }
    if (target === null || target === undefined) return { kind: 'null', line };
    if (isScalar(target)) {
      const v = target.value;
      const written = target.type === 'PLAIN' && typeof target.source === 'string' ? target.source : String(v);
      if (v === null || v === undefined) return { kind: 'null', line };
      if (typeof v === 'string') return { kind: 'str', value: v, line };
      if (typeof v === 'number') return { kind: 'num', value: v, text: written, line };
      if (typeof v === 'boolean') return { kind: 'bool', value: v, text: written, line };
      return { kind: 'other', line };
    }
    if (depth >= MAX_DEPTH) return { kind: 'other', line };
    if (isSeq(target)) {
      return {
        kind: 'list',
        items: target.items.map((item) => this.value(item, this.line(item) ?? line, depth + 1)),
        line,
      };
    }
    if (isMap(target)) return this.map(target, line, depth);
    return { kind: 'other', line };
  }

  private map(node: YAMLMap, line: SourceLine, depth: number): ConfigMap {
    const readers = new Map<string, () => ConfigValue | undefined>();
    const explicit = new Set<string>();
    for (const pair of node.items) if (!isMergeKey(pair.key)) explicit.add(keyText(pair.key));
    // `<<` merges give way to the map's own keys, and earlier sources to later ones (YAML 1.1).
    for (const pair of node.items) {
      const keyLine = this.line(pair.key) ?? line;
      if (isMergeKey(pair.key)) {
        const from = this.value(pair.value, keyLine, depth + 1);
        for (const source of from.kind === 'list' ? from.items : [from]) {
          if (source.kind !== 'map') {
            throw this.invalid(pair.key, '"<<" must merge a mapping or a list of mappings');
          }
          for (const key of source.keys) {
            if (!explicit.has(key) && !readers.has(key)) readers.set(key, () => source.get(key));
          }
        }
      } else {
        const key = keyText(pair.key);
        if (!readers.has(key)) readers.set(key, () => this.value(pair.value, keyLine, depth + 1));
      }
    }
    return lazyConfigMap([...readers.keys()], line, (key) => readers.get(key)?.());
  }
}

function isMergeKey(key: unknown): key is Scalar {
  return isScalar(key) && typeof key.value === 'symbol';
}

function keyText(key: unknown): string {
  if (key === null || key === undefined) return '';
  if (!isScalar(key)) return '[complex key]';
  const v = key.value;
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (key.type === 'PLAIN' && typeof key.source === 'string') return key.source;
  return String(v);
}

export function yamlError(message: string): ValidationError {
  return ValidationError.field('configuration', message);
}
