/**
 * The OIDC policy language of a suite (src/suites/oidc-policy.ts), as package_registries'
 * security/oidc.md defines it and test_collection/oidc.md uses it: what a create or update may
 * send, and which claims a statement lets through.
 */
import type { FieldError } from '../../src/core/errors';
import { globMatches, grantedScopes, parseOidcPolicy } from '../../src/suites/oidc-policy';

const OWN = 'http://windsock.test';

function parsed(input: unknown) {
  const errors: FieldError[] = [];
  const policy = parseOidcPolicy(input, errors);
  return { policy, errors };
}

describe('a suite’s OIDC policy', () => {
  it('reads the docs’ YAML policy and the same as a JSON array alike', () => {
    const yaml = [
      '- iss: "https://agent.buildkite.com"',
      '  claims:',
      '    organization_slug: "your-org"',
      '    pipeline_slug:',
      '      in:',
      '        - "your-pipeline"',
      '        - "another-pipeline"',
      '  scopes:',
      '    - "read_suites"',
      '    - "write_uploads"',
      '    - "read_test_plan"  # Optional: only required when using the bktec CLI tool',
      '',
    ].join('\n');
    const expected = [
      {
        iss: 'https://agent.buildkite.com',
        scopes: ['read_suites', 'write_uploads', 'read_test_plan'],
        claims: { organization_slug: 'your-org', pipeline_slug: { in: ['your-pipeline', 'another-pipeline'] } },
      },
    ];
    expect(parsed(yaml)).toEqual({ policy: expected, errors: [] });
    expect(parsed(expected)).toEqual({ policy: expected, errors: [] });
    // None: null, a blank string, no statement.
    for (const none of [null, '  \n', []]) expect(parsed(none)).toEqual({ policy: null, errors: [] });
  });

  it('names each fault: a misspelt property, an unknown scope or matcher, a malformed rule, complex YAML', () => {
    expect(
      parsed([
        { iss: 'https://agent.buildkite.com', scopes: ['write_uploads'], claim: { pipeline_slug: 'x' }, claims: {} },
        { iss: '', scopes: ['write_packages'], claims: { build_branch: { regex: 'main' }, pipeline_slug: { in: [] }, x: ['a'] } },
        'not a statement',
      ]).errors,
    ).toEqual([
      { field: 'oidc_policy[0].claim', code: 'is not a statement property (iss, scopes, claims)' },
      { field: 'oidc_policy[1].iss', code: 'must be the issuer of the tokens, a URL' },
      { field: 'oidc_policy[1].scopes[0]', code: 'must be one of read_suites, write_uploads, read_test_plan, write_test_plan' },
      { field: 'oidc_policy[1].claims.build_branch.regex', code: 'is not a matcher (equals, not_equals, in, not_in, matches)' },
      { field: 'oidc_policy[1].claims.pipeline_slug.in', code: 'must be a list of 1 to 100 scalars' },
      { field: 'oidc_policy[1].claims.x', code: 'must be a scalar or a map of matchers (equals, not_equals, in, not_in, matches)' },
      { field: 'oidc_policy[2]', code: 'must be a statement: a map of iss, scopes and claims' },
    ]);
    expect(parsed([{ iss: 'https://agent.buildkite.com', claims: {} }]).errors).toEqual([
      { field: 'oidc_policy[0].scopes', code: 'must list the scopes the statement grants' },
    ]);
    expect(parsed({ iss: 'x' }).errors).toEqual([{ field: 'oidc_policy', code: 'must be a list of policy statements (YAML or JSON)' }]);
    expect(parsed('- iss: [unclosed').errors).toEqual([{ field: 'oidc_policy', code: expect.stringMatching(/^is not valid YAML: /) }]);
    const aliased = '- &s\n  iss: https://agent.buildkite.com\n  scopes: [write_uploads]\n  claims: {}\n- *s\n';
    expect(parsed(aliased).errors).toEqual([{ field: 'oidc_policy', code: 'may only hold scalars, maps and lists (no anchors, aliases or tags)' }]);
    expect(parsed('- !!map {iss: x}').errors).toEqual([{ field: 'oidc_policy', code: 'may only hold scalars, maps and lists (no anchors, aliases or tags)' }]);
  });

  it('grants the scopes of the first statement whose issuer and every claim rule match', () => {
    const claims = { iss: OWN, organization_slug: 'acme', pipeline_slug: 'web', build_branch: 'feature/login', build_number: 7 };
    const policy = parsed([
      { iss: 'https://token.actions.githubusercontent.com', scopes: ['read_suites'], claims: {} },
      {
        iss: 'https://agent.buildkite.com',
        scopes: ['write_uploads'],
        claims: {
          organization_slug: { equals: 'acme' },
          pipeline_slug: { in: ['web', 'api'] },
          build_branch: { matches: ['main', 'feature/*'], not_equals: 'feature/not-this-one' },
          build_number: 7,
        },
      },
      { iss: `${OWN}/`, scopes: ['read_suites'], claims: { organization_slug: 'acme' } },
    ]).policy;
    // Buildkite's agent issuer names this server's; the GitHub statement matches no token of it.
    expect(grantedScopes(policy, claims, OWN)).toEqual(['write_uploads']);
    // A rule that fails passes the token on to the next statement, here the own issuer's.
    expect(grantedScopes(policy, { ...claims, build_branch: 'feature/not-this-one' }, OWN)).toEqual(['read_suites']);
    expect(grantedScopes(policy, { ...claims, pipeline_slug: 'docs' }, OWN)).toEqual(['read_suites']);
    expect(grantedScopes(policy, { ...claims, build_number: '7' }, OWN)).toEqual(['read_suites']);
    // A claim the rule names must be there.
    const { build_number: _, ...unnumbered } = claims;
    expect(grantedScopes(policy, unnumbered, OWN)).toEqual(['read_suites']);
    expect(grantedScopes(policy, { ...claims, organization_slug: 'other' }, OWN)).toBeNull();
    expect(grantedScopes(policy, { ...claims, iss: 'https://agent.buildkite.com' }, OWN)).toBeNull();
    expect(grantedScopes(null, claims, OWN)).toBeNull();
    // `matches` is ignored for a claim that is not a string; not_in refuses what it lists.
    const numbered = parsed([{ iss: OWN, scopes: ['write_uploads'], claims: { build_number: { matches: '1*', not_in: [8, 9] } } }]).policy;
    expect(grantedScopes(numbered, claims, OWN)).toEqual(['write_uploads']);
    expect(grantedScopes(numbered, { ...claims, build_number: 8 }, OWN)).toBeNull();
  });

  it('matches globs with * and ? only, whole values, and many stars without backtracking', () => {
    expect(globMatches('feature/*', 'feature/login')).toBe(true);
    expect(globMatches('feature/*', 'feature/')).toBe(true);
    expect(globMatches('feature/*', 'hotfix/feature/x')).toBe(false);
    expect(globMatches('v?.?', 'v1.2')).toBe(true);
    expect(globMatches('v?.?', 'v1.23')).toBe(false);
    expect(globMatches('a.b', 'axb')).toBe(false);
    expect(globMatches('[ab]', 'a')).toBe(false);
    expect(globMatches('*a*a*a*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(5000))).toBe(false);
    expect(globMatches('*', '')).toBe(true);
  });
});
