import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import {
  CONDITION_VARIABLES,
  conditionError,
  parseCondition,
  type ConditionContext,
  type ConditionNode,
  type Value,
} from '../../src/pipelines/filter-condition';

function evaluate(text: string, vars: Record<string, Value> = {}): boolean {
  const parsed = parseCondition(text);
  if (!parsed.ok) throw new Error(`did not parse: ${parsed.error.message} at ${parsed.error.position}`);
  return parsed.condition.evaluate(new Map(Object.entries(vars)));
}

function errorOf(text: string) {
  const parsed = parseCondition(text);
  if (parsed.ok) throw new Error(`parsed, but should not have: ${text}`);
  return parsed.error;
}

const pr = {
  'build.pull_request.id': '42',
  'build.pull_request.draft': false,
  'build.pull_request.labels': ['ci', 'deploy'],
  'build.pull_request.base_branch': 'main',
};

describe('filter conditions', () => {
  it('compares strings, numbers, booleans and null', () => {
    expect(evaluate('build.branch == "main"', { 'build.branch': 'main' })).toBe(true);
    expect(evaluate("build.branch == 'main'", { 'build.branch': 'dev' })).toBe(false);
    expect(evaluate('build.branch != "main"', { 'build.branch': 'dev' })).toBe(true);
    expect(evaluate('build.tag != null', { 'build.tag': 'v1.0.0' })).toBe(true);
    expect(evaluate('build.tag == null', {})).toBe(true);
    expect(evaluate('build.pull_request.id == 42', pr)).toBe(true);
    expect(evaluate('build.pull_request.id == "42"', pr)).toBe(true);
    expect(evaluate('build.pull_request.draft == false', pr)).toBe(true);
    expect(evaluate('build.message == "say \\"hi\\"\\n"', { 'build.message': 'say "hi"\n' })).toBe(true);
  });

  it('matches regular expressions with =~ and !~, flags i, m and s', () => {
    const vars = { 'build.message': 'Fix the thing [DEPLOY]', 'build.branch': 'release/1.2' };
    expect(evaluate('build.message =~ /\\[deploy\\]/i', vars)).toBe(true);
    expect(evaluate('build.message =~ /\\[deploy\\]/', vars)).toBe(false);
    expect(evaluate('build.branch !~ /^release\\//', vars)).toBe(false);
    expect(evaluate('build.branch =~ /^release\\/[0-9.]+$/', vars)).toBe(true);
    // A slash inside a character class does not end the expression.
    expect(evaluate('build.branch =~ /[/]1/', vars)).toBe(true);
    // null never matches.
    expect(evaluate('build.tag =~ /./', vars)).toBe(false);
    expect(evaluate('build.tag !~ /./', vars)).toBe(true);
  });

  it('combines with &&, ||, ! and parentheses, && binding tighter than ||', () => {
    const vars = { 'build.branch': 'main', ...pr };
    expect(evaluate('build.branch == "dev" && build.branch == "main" || true', vars)).toBe(true);
    expect(evaluate('build.branch == "dev" && (build.branch == "main" || true)', vars)).toBe(false);
    expect(evaluate('!build.pull_request.draft', vars)).toBe(true);
    expect(evaluate('!!build.pull_request.draft', vars)).toBe(false);
    expect(evaluate('!(build.branch == "main")', vars)).toBe(false);
    expect(evaluate('build.pull_request.labels includes "deploy" && !build.pull_request.draft', vars)).toBe(true);
    expect(evaluate('build.pull_request.labels includes "nope"', vars)).toBe(false);
    // includes on something that is not a list is false, not an error.
    expect(evaluate('build.branch includes "m"', vars)).toBe(false);
  });

  it('skips // comments to the end of their line, but not inside a string or a regular expression', () => {
    const vars = { 'build.branch': 'feature/x', 'build.message': 'see http://example.com // here' };
    expect(evaluate('// Only run on feature branches\nbuild.branch =~ /^feature\\// // and nowhere else\n', vars)).toBe(true);
    expect(evaluate('build.message == "see http://example.com // here" // a comment', vars)).toBe(true);
    expect(evaluate('build.message =~ /http:\\/\\//', vars)).toBe(true);
    expect(errorOf('// only a comment').message).toBe('the condition is empty');
    expect(evaluate('build.branch == "main" // || true', vars)).toBe(false);
  });

  it('treats null, false, "" and 0 as false and everything else as true', () => {
    expect(evaluate('build.tag', {})).toBe(false);
    expect(evaluate('build.tag', { 'build.tag': '' })).toBe(false);
    expect(evaluate('build.tag', { 'build.tag': 'v1' })).toBe(true);
    expect(evaluate('0')).toBe(false);
    expect(evaluate('build.pull_request.labels', { 'build.pull_request.labels': [] })).toBe(true);
  });

  it('reports where a condition goes wrong, 1-based in the field error', () => {
    expect(errorOf('')).toEqual({ message: 'the condition is empty', position: 0 });
    expect(errorOf('build.branch == ')).toMatchObject({ position: 16, message: expect.stringContaining('but the condition ended') });
    expect(errorOf('build.brnch == "main"')).toEqual({ message: 'unknown variable `build.brnch`', position: 0 });
    expect(errorOf('build.branch == "main" && constructor')).toEqual({ message: 'unknown variable `constructor`', position: 26 });
    expect(errorOf('build.branch = "main"')).toMatchObject({ position: 13, message: expect.stringContaining('found `=`') });
    expect(errorOf('build.branch == "main')).toEqual({ message: 'unterminated string (no closing ")', position: 16 });
    expect(errorOf('(build.branch == "main"')).toMatchObject({ position: 23, message: expect.stringContaining('expected `)`') });
    expect(errorOf('build.message =~ "x"')).toMatchObject({ position: 17, message: expect.stringContaining('regular expression') });
    expect(errorOf('build.message =~ /(/')).toMatchObject({ position: 17, message: expect.stringContaining('invalid regular expression') });
    expect(errorOf('build.message =~ /x/g')).toMatchObject({ position: 20, message: expect.stringContaining('flags') });
    expect(errorOf('build.branch == "a" == "b"')).toMatchObject({ position: 20, message: expect.stringContaining('found `==`') });
    expect(errorOf('('.repeat(100) + 'true' + ')'.repeat(100))).toMatchObject({ message: expect.stringContaining('nested') });
    expect(conditionError('build.branch == ')).toBe(
      'is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but the condition ended at character 17',
    );
    expect(conditionError('build.branch == "main"')).toBeNull();
  });

  it('knows every variable it documents', () => {
    for (const name of CONDITION_VARIABLES) expect(parseCondition(`${name} == null`).ok).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

/** Prints a tree as condition text, parenthesising every binary node so the shape is explicit. */
function print(n: ConditionNode): string {
  switch (n.kind) {
    case 'literal':
      return typeof n.value === 'string' ? JSON.stringify(n.value) : String(n.value);
    case 'variable':
      return n.name;
    case 'env':
      return `build.env(${JSON.stringify(n.name)})`;
    case 'regex':
      return `/${n.source}/${n.flags}`;
    case 'not':
      return `!${print(n.operand)}`;
    case 'and':
      return `(${print(n.left)} && ${print(n.right)})`;
    case 'or':
      return `(${print(n.left)} || ${print(n.right)})`;
    case 'compare':
      return `(${print(n.left)} ${n.op} ${print(n.right)})`;
  }
}

const scalar = fc.oneof(
  fc.string({ maxLength: 12 }).map((value) => ({ kind: 'literal', value }) as ConditionNode),
  fc.integer({ min: 0, max: 1_000_000 }).map((value) => ({ kind: 'literal', value }) as ConditionNode),
  fc.constantFrom(true, false, null).map((value) => ({ kind: 'literal', value }) as ConditionNode),
  fc.constantFrom(...CONDITION_VARIABLES).map((name) => ({ kind: 'variable', name }) as ConditionNode),
);
const regex = fc.record({
  kind: fc.constant('regex' as const),
  source: fc.constantFrom('^main$', 'release\\/.*', '\\[deploy\\]', '[/]x', 'a|b', '\\d+'),
  flags: fc.constantFrom('', 'i', 'ms'),
});

const tree = fc.letrec<{ node: ConditionNode; operand: ConditionNode }>((tie) => ({
  operand: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('node')),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    tie('operand').map((operand) => ({ kind: 'not', operand }) as ConditionNode),
    fc
      .tuple(fc.constantFrom('and' as const, 'or' as const), tie('operand'), tie('operand'))
      .map(([kind, left, right]) => ({ kind, left, right }) as ConditionNode),
    fc
      .tuple(fc.constantFrom('==' as const, '!=' as const, 'includes' as const), tie('operand'), tie('operand'))
      .map(([op, left, right]) => ({ kind: 'compare', op, left, right }) as ConditionNode),
    fc
      .tuple(fc.constantFrom('=~' as const, '!~' as const), tie('operand'), regex)
      .map(([op, left, right]) => ({ kind: 'compare', op, left, right }) as ConditionNode),
  ),
})).node;

const value: fc.Arbitrary<Value> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.boolean(),
  fc.constant(null),
  fc.integer(),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }),
);
const context: fc.Arbitrary<ConditionContext> = fc.dictionary(fc.constantFrom(...CONDITION_VARIABLES), value).map((d) => new Map(Object.entries(d)));

// Pieces of would-be code: if any of it were evaluated, the sentinel would be set or the process poked.
const codeSnippets = [
  'globalThis.__pwned = 1',
  'process.exit(1)',
  'require("child_process").execSync("touch /tmp/pwned")',
  'constructor.constructor("globalThis.__pwned = 1")()',
  '__proto__.polluted = 1',
  '${globalThis.__pwned = 1}',
  '`${globalThis.__pwned = 1}`',
  'build.branch.constructor',
  'this',
  ';',
  'eval("1")',
  'new Function("return 1")()',
];
const tokenSoup = fc
  .array(
    fc.oneof(
      fc.constantFrom(...codeSnippets),
      fc.constantFrom(...CONDITION_VARIABLES),
      fc.constantFrom('==', '!=', '=~', '!~', '&&', '||', '!', '(', ')', 'includes', 'true', 'null', '"main"', "'x'", '/re/i', '/', '"', '\\', '42', ' '),
      fc.string({ maxLength: 6 }),
    ),
    { maxLength: 25 },
  )
  .map((parts) => parts.join(' '));

describe('filter condition properties', () => {
  afterEach(() => {
    expect((globalThis as Record<string, unknown>).__pwned).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('never throws on arbitrary text, and reports positions inside the text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), tokenSoup), (text) => {
        const parsed = parseCondition(text);
        if (!parsed.ok) {
          expect(parsed.error.position).toBeGreaterThanOrEqual(0);
          expect(parsed.error.position).toBeLessThanOrEqual(text.length);
          expect(parsed.error.message.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never evaluates code: injected JavaScript is a parse error or inert data', () => {
    fc.assert(
      fc.property(tokenSoup, context, (text, ctx) => {
        const parsed = parseCondition(text);
        if (parsed.ok) expect(typeof parsed.condition.evaluate(ctx)).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
    for (const snippet of codeSnippets) {
      expect(parseCondition(snippet).ok).toBe(false);
      expect(parseCondition(`build.branch == "main" || ${snippet}`).ok).toBe(false);
    }
    // Nothing in the module can turn text into code.
    const source = fs.readFileSync(path.join(__dirname, '../../src/pipelines/filter-condition.ts'), 'utf8');
    expect(source).not.toMatch(/\beval\s*\(|new Function|\bFunction\s*\(|\bvm\b|require\(/);
  });

  it('only names documented variables: any other path is rejected at its position', () => {
    const ident = fc
      .stringMatching(/^[a-z_][a-z0-9_]{0,8}(\.[a-z_][a-z0-9_]{0,8}){0,3}$/)
      .filter((name) => !(CONDITION_VARIABLES as readonly string[]).includes(name) && !['true', 'false', 'null', 'includes'].includes(name));
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), ident, (prefix, name) => {
        const text = `${JSON.stringify(prefix)} == ${name}`;
        expect(parseCondition(text)).toEqual({ ok: false, error: { message: `unknown variable \`${name}\``, position: text.length - name.length } });
      }),
    );
  });

  it('parses what it prints back into the same tree, and evaluates it to a boolean', () => {
    fc.assert(
      fc.property(tree, context, (ast, ctx) => {
        const parsed = parseCondition(print(ast));
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        expect(parsed.condition.ast).toEqual(ast);
        expect(typeof parsed.condition.evaluate(ctx)).toBe('boolean');
      }),
      { numRuns: 1000 },
    );
  });

  it('agrees with De Morgan: !(a && b) is !a || !b', () => {
    fc.assert(
      fc.property(tree, tree, context, (a, b, ctx) => {
        const left = parseCondition(`!(${print(a)} && ${print(b)})`);
        const right = parseCondition(`!(${print(a)}) || !(${print(b)})`);
        if (!left.ok || !right.ok) throw new Error('did not parse');
        expect(left.condition.evaluate(ctx)).toBe(right.condition.evaluate(ctx));
      }),
      { numRuns: 500 },
    );
  });
});
