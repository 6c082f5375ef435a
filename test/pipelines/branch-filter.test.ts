/** Branch filter patterns: `*` globs, `!` exclusions, and their combination rules. */

import { globMatch, matchesBranchFilter, validateBranchFilter } from '../../src/pipelines/branch-filter';

function table(filter: string | null | undefined, yes: string[], no: string[]): void {
  for (const branch of yes) expect([branch, matchesBranchFilter(filter, branch)]).toEqual([branch, true]);
  for (const branch of no) expect([branch, matchesBranchFilter(filter, branch)]).toEqual([branch, false]);
}

describe('matchesBranchFilter', () => {
  it('lets every branch through without a filter', () => {
    for (const filter of [null, undefined, '', ' ', '  \t\n ']) {
      table(filter, ['main', 'features/x', '', 'v1.0'], []);
    }
  });

  it('`main features/*`', () => {
    table(
      'main features/*',
      ['main', 'features/login', 'features/', 'features/a/b/c'],
      ['master', 'mainline', 'xmain', 'feature/login', 'my-features/x', 'Features/x', 'Main'],
    );
  });

  it('`*-test`', () => {
    table('*-test', ['unit-test', '-test', 'a/b-test', 'x-test-test'], ['test', 'unit-tests', 'unit_test', 'unit-test/x']);
  });

  it('`stages/* !stages/production`', () => {
    table(
      'stages/* !stages/production',
      ['stages/staging', 'stages/production-eu', 'stages/', 'stages/production/x'],
      ['stages/production', 'main', 'stage/x'],
    );
  });

  it('`v* !v1.*`', () => {
    table('v* !v1.*', ['v2.0', 'v10.1', 'v1', 'v', 'v1x2', 'vendor'], ['v1.0', 'v1.', 'v1.2.3', 'release']);
  });

  it('`!main` alone lets through everything but main', () => {
    table('!main', ['master', 'features/x', 'mainline', 'xmain', ''], ['main']);
  });

  it('combines several exclusions with no inclusion', () => {
    table('!main !release/*', ['develop', 'releases/x'], ['main', 'release/1.0', 'release/']);
  });

  it('exclusion wins over inclusion regardless of order', () => {
    table('!main main', [], ['main']);
    table('main !main', [], ['main']);
    table('* !*', [], ['anything', '']);
  });

  it('`*` alone matches every branch, including the empty name and slashes', () => {
    table('*', ['', 'main', 'a/b/c', '*'], []);
  });

  it('matches names literally apart from `*`', () => {
    table('release.1', ['release.1'], ['releasex1', 'release11']);
    table('a+b', ['a+b'], ['aab', 'ab']);
    table('(x)|[y]', ['(x)|[y]'], ['x', 'y']);
    table('^main$', ['^main$'], ['main']);
    table('feat?', ['feat?'], ['feat', 'feats']);
    table('a\\*b', ['a\\b', 'a\\xyzb'], ['a*b', 'ab']);
    table('{a,b}', ['{a,b}'], ['a', 'b']);
  });

  it('is case sensitive, as git branch names are', () => {
    table('Main', ['Main'], ['main', 'MAIN']);
  });

  it('splits on any whitespace and ignores repeats', () => {
    table('  main \t\n develop  ', ['main', 'develop'], ['main develop', '']);
  });

  it('handles several stars in one pattern', () => {
    table('*/*', ['a/b', '/', 'a/b/c'], ['ab']);
    table('a**b', ['ab', 'axb'], ['a', 'ba']);
    table('*a*b*', ['ab', 'xaxbx', 'ba-b'], ['ba', 'b']);
    table('feature/*/fix-*', ['feature/x/fix-1', 'feature/a/b/fix-'], ['feature/fix-1', 'feature/x/fix']);
  });

  it('treats `!!x` as excluding the literal branch `!x`', () => {
    table('!!x', ['x', 'y'], ['!x']);
  });

  it('ignores a lone `!` rather than excluding everything', () => {
    table('!', ['main'], []);
    table('main !', ['main'], ['develop']);
  });

  it('finishes promptly on patterns that make backtracking matchers explode', () => {
    const branch = 'a'.repeat(5000);
    expect(matchesBranchFilter('*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b', branch)).toBe(false);
    expect(matchesBranchFilter(`${'*a'.repeat(500)}*b`, branch)).toBe(false);
    expect(matchesBranchFilter(`${'*a'.repeat(500)}*`, branch)).toBe(true);
    expect(matchesBranchFilter('*'.repeat(10000), branch)).toBe(true);
  });
});

describe('globMatch', () => {
  it.each([
    ['', '', true],
    ['', 'a', false],
    ['a', '', false],
    ['*', '', true],
    ['**', '', true],
    ['a*', 'a', true],
    ['*a', 'a', true],
    ['a*a', 'a', false], // head and tail cannot share the one `a`
    ['a*a', 'aa', true],
    ['ab*ba', 'aba', false],
    ['ab*ba', 'abba', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'acb', false],
    ['a*bc*bc', 'abcbc', true],
    ['a*bc*bc', 'abc', false],
    ['*ab*ab', 'abab', true],
    ['*aa*aa', 'aaa', false],
    ['*aa*aa', 'aaaa', true],
  ])('%j against %j is %j', (pattern, text, expected) => {
    expect(globMatch(pattern, text)).toBe(expected);
  });
});

describe('validateBranchFilter', () => {
  it.each(['', '   ', 'main', 'main features/*', '!main', 'v* !v1.*', '*', '!!x', '!*'])('accepts %j', (filter) => {
    expect(validateBranchFilter(filter)).toBeNull();
  });

  it.each(['!', 'main !', '! main', 'a  !  b'])('rejects a lone `!` in %j', (filter) => {
    expect(validateBranchFilter(filter)).toBe('`!` must be followed by a pattern');
  });

  it('rejects a non-string', () => {
    expect(validateBranchFilter(42 as unknown as string)).toBe('must be a string');
  });
});
