/**
 * The `filter_condition` provider setting: a conditional expression over the would-be build of a
 * webhook delivery, e.g. `build.branch == "main" || build.message =~ /\[deploy\]/i`.
 *
 * Our own small recursive-descent parser and tree-walking evaluator: the text is never handed to
 * `eval`, `Function` or a template engine, variables are looked up by exact name in a Map (so no
 * `constructor`/`__proto__` tricks reach an object), and unknown variables are parse errors.
 *
 * Grammar (`!` binds tightest, then comparisons, then `&&`, then `||`):
 *
 *   condition  := or END
 *   or         := and ( "||" and )*
 *   and        := compare ( "&&" compare )*
 *   compare    := unary ( ( "==" | "!=" ) unary | ( "=~" | "!~" ) REGEX | "includes" unary )?
 *   unary      := "!" unary | primary
 *   primary    := "(" or ")" | STRING | NUMBER | true | false | null | VARIABLE | ENV "(" STRING ")"
 *
 * where ENV is `build.env`, or a known name ending in `.build.env` (a rule's `source.build.env`).
 */

export type Scalar = string | number | boolean | null;
export type Value = Scalar | readonly string[];

export type CompareOp = '==' | '!=' | '=~' | '!~' | 'includes';

export type ConditionNode =
  | { kind: 'literal'; value: Scalar }
  | { kind: 'variable'; name: string }
  /** `build.env("NAME")` (`fn`: the function's name, `build.env` or e.g. `source.build.env`): read from the context under envVariable(NAME, fn). */
  | { kind: 'env'; fn: string; name: string }
  | { kind: 'regex'; source: string; flags: string }
  | { kind: 'not'; operand: ConditionNode }
  | { kind: 'and' | 'or'; left: ConditionNode; right: ConditionNode }
  | { kind: 'compare'; op: CompareOp; left: ConditionNode; right: ConditionNode };

export interface ConditionError {
  message: string;
  /** 0-based offset into the text where the problem starts. */
  position: number;
}

/** What a condition may name, and what each holds (documented in the spec's ProviderSettings). */
export const CONDITION_VARIABLES = [
  'build.branch',
  'build.tag',
  'build.message',
  'build.commit',
  'build.source',
  'build.author.name',
  'build.author.email',
  'build.author.username',
  'build.pull_request.id',
  'build.pull_request.base_branch',
  'build.pull_request.draft',
  'build.pull_request.labels',
  'build.pull_request.repository',
  'build.pull_request.repository.fork',
  'pipeline.slug',
  'pipeline.default_branch',
  'pipeline.repository',
  'organization.slug',
] as const;

export type ConditionVariable = (typeof CONDITION_VARIABLES)[number];

/**
 * What a step's `if` may name on top of CONDITION_VARIABLES (the docs' conditionals reference):
 * the build's identity and creator, and `build.env("NAME")`, which reads the build's environment
 * (the pipeline's and the build's env, and the build's `BUILDKITE_*` variables). The ones only
 * a webhook or a merge queue sets read null on builds that have none.
 */
export const STEP_CONDITION_VARIABLES = [
  'build.id',
  'build.number',
  'build.creator.id',
  'build.creator.name',
  'build.creator.email',
  'build.creator.teams',
  'build.author.id',
  'build.author.teams',
  'build.pull_request.label',
  'build.merge_queue.base_branch',
  'build.merge_queue.base_commit',
  'build.source_event',
  'build.source_action',
  'pipeline.id',
  'organization.id',
  'build.env',
] as const;

/**
 * The `build.*` variables of a step's `if` (CONDITION_VARIABLES and STEP_CONDITION_VARIABLES;
 * `build.env` the function): everything a build has in the conditionals language. A rule's
 * conditions name them as `source.build.*` and `target.build.*` (src/rules/policy.ts), their
 * values the `build.*` entries of a step's condition context (stepConditionContext in
 * src/builds/jobs/plan.ts).
 */
export const STEP_BUILD_VARIABLES: readonly string[] = [...CONDITION_VARIABLES, ...STEP_CONDITION_VARIABLES].filter((v) => v.startsWith('build.'));

/** Whether a known name is the env function: `build.env`, or one ending in `.build.env` (a rule's `source.build.env`). */
const isEnvFunction = (name: string) => name === 'build.env' || name.endsWith('.build.env');

/** The context key `build.env("NAME")` reads (`fn("NAME")` for another env function, e.g. `source.build.env`). */
export const envVariable = (name: string, fn = 'build.env') => `${fn}(${JSON.stringify(name)})`;

/**
 * What a `notify` entry's `if` may name on top of CONDITION_VARIABLES: a step's (conditionals.md:
 * notifications use "the same `if` syntax as in your Steps"), and the build's outcome, known when
 * a notification is sent (the delivery side puts them in the context).
 */
export const NOTIFY_CONDITION_VARIABLES = [
  ...STEP_CONDITION_VARIABLES,
  'build.state',
  'build.fixed',
  'pipeline.started_passing',
  'pipeline.started_failing',
] as const;
/** The step variables of a step-level `notify` entry's `if` (the docs: for conditional notifications only). */
export const STEP_NOTIFY_CONDITION_VARIABLES = ['step.id', 'step.key', 'step.label', 'step.type', 'step.state', 'step.outcome'] as const;
export type ConditionContext = ReadonlyMap<string, Value>;

const KNOWN = new Set<string>(CONDITION_VARIABLES);
const REGEX_FLAGS = /^[ims]*$/;
// Deep enough for any hand-written condition, shallow enough that `((((...` cannot exhaust the stack.
const MAX_DEPTH = 64;

export class Condition {
  private readonly regexes = new Map<ConditionNode, RegExp>();

  constructor(readonly ast: ConditionNode) {
    const compile = (n: ConditionNode): void => {
      switch (n.kind) {
        case 'regex':
          this.regexes.set(n, new RegExp(n.source, n.flags));
          return;
        case 'not':
          return compile(n.operand);
        case 'and':
        case 'or':
        case 'compare':
          compile(n.left);
          return compile(n.right);
        default:
          return;
      }
    };
    compile(ast);
  }

  /** The variables it names. */
  variables(): Set<string> {
    const found = new Set<string>();
    const walk = (n: ConditionNode): void => {
      if (n.kind === 'variable') found.add(n.name);
      else if (n.kind === 'env') found.add(n.fn);
      else if (n.kind === 'not') walk(n.operand);
      else if (n.kind === 'and' || n.kind === 'or' || n.kind === 'compare') {
        walk(n.left);
        walk(n.right);
      }
    };
    walk(this.ast);
    return found;
  }

  /** Whether the build passes. A variable missing from `ctx` reads as null. */
  evaluate(ctx: ConditionContext): boolean {
    return truthy(this.value(this.ast, ctx));
  }

  private value(n: ConditionNode, ctx: ConditionContext): Value {
    switch (n.kind) {
      case 'literal':
        return n.value;
      case 'variable':
        return ctx.get(n.name) ?? null;
      case 'env':
        return ctx.get(envVariable(n.name, n.fn)) ?? null;
      case 'regex':
        // Only reachable as the right side of =~ / !~, which reads the RegExp directly.
        return `/${n.source}/${n.flags}`;
      case 'not':
        return !truthy(this.value(n.operand, ctx));
      case 'and':
        return truthy(this.value(n.left, ctx)) && truthy(this.value(n.right, ctx));
      case 'or':
        return truthy(this.value(n.left, ctx)) || truthy(this.value(n.right, ctx));
      case 'compare': {
        const left = this.value(n.left, ctx);
        switch (n.op) {
          case '==':
            return equal(left, this.value(n.right, ctx));
          case '!=':
            return !equal(left, this.value(n.right, ctx));
          case '=~':
          case '!~': {
            const re = this.regexes.get(n.right)!;
            // A fresh lastIndex each time: flags never include g/y, so test() is stateless anyway.
            const matched = typeof left === 'string' && re.test(left);
            return n.op === '=~' ? matched : !matched;
          }
          case 'includes': {
            const right = this.value(n.right, ctx);
            return Array.isArray(left) && right !== null && typeof right !== 'object' && left.includes(String(right));
          }
        }
      }
    }
  }
}

function truthy(v: Value): boolean {
  return !(v === null || v === false || v === '' || v === 0);
}

/** Strict equality of scalars, except that a number equals its decimal string (`build.pull_request.id == 42`). */
function equal(a: Value, b: Value): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return false;
  if (typeof a === 'number' && typeof b === 'string') return String(a) === b;
  if (typeof a === 'string' && typeof b === 'number') return a === String(b);
  return a === b;
}

export type ParseResult = { ok: true; condition: Condition } | { ok: false; error: ConditionError };

/**
 * Parses a condition; never throws, whatever the text. `extraVariables`: names a caller allows
 * on top of CONDITION_VARIABLES (NOTIFY_CONDITION_VARIABLES for `notify` entries); without them,
 * exactly what the `filter_condition` setting accepts.
 */
export function parseCondition(text: string, extraVariables: readonly string[] = []): ParseResult {
  if (typeof text !== 'string') return { ok: false, error: { message: 'must be a string', position: 0 } };
  const known = extraVariables.length === 0 ? KNOWN : new Set([...KNOWN, ...extraVariables]);
  try {
    return { ok: true, condition: new Condition(new Parser(text, known).parse()) };
  } catch (err) {
    if (err instanceof ParseError) return { ok: false, error: { message: err.message, position: err.position } };
    throw err;
  }
}

/** A parse error as a field-error code. */
export function conditionProblem(error: ConditionError): string {
  return `is not a valid condition: ${error.message} at character ${error.position + 1}`;
}

/** The reason a condition cannot be used, as a field-error code, or null when it parses. */
export function conditionError(text: string, extraVariables: readonly string[] = []): string | null {
  const result = parseCondition(text, extraVariables);
  return result.ok ? null : conditionProblem(result.error);
}

class ParseError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/y;
const NUMBER = /-?\d+(?:\.\d+)?/y;
const ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly known: ReadonlySet<string>,
  ) {}

  parse(): ConditionNode {
    this.skipSpace();
    if (this.pos >= this.text.length) throw new ParseError('the condition is empty', 0);
    const node = this.or();
    this.skipSpace();
    if (this.pos < this.text.length) throw this.unexpected('`&&`, `||` or the end of the condition');
    return node;
  }

  private or(): ConditionNode {
    let left = this.and();
    while (this.eat('||')) left = { kind: 'or', left, right: this.and() };
    return left;
  }

  private and(): ConditionNode {
    let left = this.compare();
    while (this.eat('&&')) left = { kind: 'and', left, right: this.compare() };
    return left;
  }

  private compare(): ConditionNode {
    const left = this.unary();
    for (const op of ['==', '!=', '=~', '!~'] as const) {
      if (!this.eat(op)) continue;
      if (op === '=~' || op === '!~') return { kind: 'compare', op, left, right: this.regex(op) };
      return { kind: 'compare', op, left, right: this.unary() };
    }
    if (this.eatWord('includes')) return { kind: 'compare', op: 'includes', left, right: this.unary() };
    return left;
  }

  private unary(): ConditionNode {
    this.skipSpace();
    // `!` but not `!=` / `!~`, which a value cannot start with.
    if (this.text[this.pos] === '!' && this.text[this.pos + 1] !== '=' && this.text[this.pos + 1] !== '~') {
      this.pos += 1;
      return this.nested(() => ({ kind: 'not', operand: this.unary() }));
    }
    return this.primary();
  }

  private primary(): ConditionNode {
    this.skipSpace();
    const start = this.pos;
    const c = this.text[start];
    if (c === '(') {
      this.pos += 1;
      const inner = this.nested(() => this.or());
      if (!this.eat(')')) throw this.unexpected('`)`');
      return inner;
    }
    if (c === '"' || c === "'") return { kind: 'literal', value: this.string(c) };
    NUMBER.lastIndex = start;
    const num = NUMBER.exec(this.text);
    if (num) {
      this.pos = start + num[0].length;
      return { kind: 'literal', value: Number(num[0]) };
    }
    IDENT.lastIndex = start;
    const ident = IDENT.exec(this.text);
    if (ident) {
      const word = ident[0];
      this.pos = start + word.length;
      if (word === 'true') return { kind: 'literal', value: true };
      if (word === 'false') return { kind: 'literal', value: false };
      if (word === 'null') return { kind: 'literal', value: null };
      if (!this.known.has(word)) throw new ParseError(`unknown variable \`${word}\``, start);
      if (isEnvFunction(word)) return this.envCall(word);
      return { kind: 'variable', name: word };
    }
    throw this.unexpected('a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`)');
  }

  /** The rest of `build.env("NAME")` (or `fn("NAME")`), after its name. */
  private envCall(fn: string): ConditionNode {
    if (!this.eat('(')) throw this.unexpected(`\`(\`: \`${fn}\` is a function, as in ${fn}("NAME")`);
    this.skipSpace();
    const quote = this.text[this.pos];
    if (quote !== '"' && quote !== "'") throw this.unexpected('the name of an environment variable, as a "string"');
    const name = this.string(quote);
    if (!this.eat(')')) throw this.unexpected('`)`');
    return { kind: 'env', fn, name };
  }

  private string(quote: string): string {
    const start = this.pos;
    let out = '';
    this.pos += 1;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos]!;
      if (c === quote) {
        this.pos += 1;
        return out;
      }
      if (c === '\\') {
        const next = this.text[this.pos + 1];
        if (next === undefined) break;
        // JSON's escapes, so any JSON string literal is a condition string literal too.
        const hex = next === 'u' ? /^[0-9a-fA-F]{4}/.exec(this.text.slice(this.pos + 2))?.[0] : undefined;
        if (hex !== undefined) {
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 6;
          continue;
        }
        out += ESCAPES[next] ?? next;
        this.pos += 2;
        continue;
      }
      out += c;
      this.pos += 1;
    }
    throw new ParseError(`unterminated string (no closing ${quote})`, start);
  }

  private regex(op: string): ConditionNode {
    this.skipSpace();
    const start = this.pos;
    if (this.text[start] !== '/') throw this.unexpected(`a regular expression such as /^release-/ after \`${op}\``);
    let i = start + 1;
    let inClass = false;
    for (; i < this.text.length; i++) {
      const c = this.text[i];
      if (c === '\\') i += 1;
      else if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) break;
    }
    if (i >= this.text.length) throw new ParseError('unterminated regular expression (no closing /)', start);
    const source = this.text.slice(start + 1, i);
    let end = i + 1;
    while (end < this.text.length && /[A-Za-z]/.test(this.text[end]!)) end += 1;
    const flags = this.text.slice(i + 1, end);
    if (!REGEX_FLAGS.test(flags) || new Set(flags).size !== flags.length) {
      throw new ParseError(`unsupported regular expression flags \`${flags}\` (use i, m or s)`, i + 1);
    }
    try {
      new RegExp(source, flags);
    } catch (err) {
      throw new ParseError(`invalid regular expression: ${err instanceof Error ? err.message : String(err)}`, start);
    }
    this.pos = end;
    return { kind: 'regex', source, flags };
  }

  private nested<T>(fn: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new ParseError(`nested more than ${MAX_DEPTH} levels deep`, this.pos);
    try {
      return fn();
    } finally {
      this.depth -= 1;
    }
  }

  /** Whitespace, and `//` comments to the end of their line (the docs' multi-line step conditions). */
  private skipSpace() {
    for (;;) {
      while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos += 1;
      if (!this.text.startsWith('//', this.pos)) return;
      const end = this.text.indexOf('\n', this.pos);
      this.pos = end === -1 ? this.text.length : end + 1;
    }
  }

  private eat(token: string): boolean {
    this.skipSpace();
    if (!this.text.startsWith(token, this.pos)) return false;
    this.pos += token.length;
    return true;
  }

  private eatWord(word: string): boolean {
    this.skipSpace();
    if (!this.text.startsWith(word, this.pos) || /[A-Za-z0-9_.]/.test(this.text[this.pos + word.length] ?? '')) return false;
    this.pos += word.length;
    return true;
  }

  private unexpected(expected: string): ParseError {
    this.skipSpace();
    if (this.pos >= this.text.length) return new ParseError(`expected ${expected} but the condition ended`, this.pos);
    // Show the offending text the way a person would point at it: a word or one character.
    const rest = this.text.slice(this.pos);
    const found = /^(?:[A-Za-z0-9_.]+|&&|\|\||==|!=|=~|!~)/.exec(rest)?.[0] ?? String.fromCodePoint(rest.codePointAt(0)!);
    return new ParseError(`expected ${expected} but found \`${found}\``, this.pos);
  }
}
