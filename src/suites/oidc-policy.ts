/**
 * A test suite's OIDC policy (test_collection/oidc.md): which OIDC tokens, those of
 * `buildkite-agent oidc request-token`, may upload the suite's test results instead of its API
 * token. The Test Engine page shows the format; its rules are those package_registries'
 * security/oidc.md gives in full (the same policy language): a list of statements, each an
 * issuer (`iss`), the scopes it grants and claim rules, all of which must hold; the first
 * statement that matches a token decides its scopes. No HTTP, no SQL.
 */
import { isAlias, isNode, parseDocument, visit } from 'yaml';
import type { FieldError } from '../core/errors';
import { isRecord } from '../core/guards';

export type ClaimScalar = string | number | boolean | null;
export type ClaimMatchers = {
  equals?: ClaimScalar;
  not_equals?: ClaimScalar;
  in?: ClaimScalar[];
  not_in?: ClaimScalar[];
  matches?: string | string[];
};
/** A claim rule: matchers, or a scalar, which is the `equals` matcher. */
export type ClaimRule = ClaimScalar | ClaimMatchers;
/** The scopes a suite's statement may grant (test_collection/oidc.md's example lists them all). */
export const POLICY_SCOPES = ['read_suites', 'write_uploads', 'read_test_plan', 'write_test_plan'] as const;
export type PolicyScope = (typeof POLICY_SCOPES)[number];
export interface OidcStatement {
  iss: string;
  scopes: PolicyScope[];
  claims: Record<string, ClaimRule>;
}
/** The scope an upload needs. */
export const UPLOAD_SCOPE = 'write_uploads';

/**
 * The issuer the docs' policies name for agent tokens. This server issues its agents' tokens
 * itself, as its PUBLIC_URL (src/security/oidc.ts), so a statement naming Buildkite's agent
 * issuer names this server's: a policy written for Buildkite works here unchanged.
 */
export const BUILDKITE_AGENT_ISSUER = 'https://agent.buildkite.com';

const MATCHERS = ['equals', 'not_equals', 'in', 'not_in', 'matches'] as const;
const STATEMENT_KEYS = ['iss', 'scopes', 'claims'];
const MAX_STATEMENTS = 50;
const MAX_CLAIMS = 50;
const MAX_LIST = 100;
const MAX_TEXT = 1000;

/**
 * The policy create or update sends (`oidc_policy`): a YAML string or a JSON array of
 * statements, null (or a blank string, or no statement at all) for none. Each fault is added
 * to `errors` (null is returned then). Only simple YAML is taken (scalars, maps and lists: the
 * docs refuse anchors, aliases and tags), and a statement holds nothing but its three
 * properties: a misspelt `claim` would otherwise widen who may upload.
 */
export function parseOidcPolicy(input: unknown, errors: FieldError[], field = 'oidc_policy'): OidcStatement[] | null {
  const value = typeof input === 'string' ? fromYaml(input, field, errors) : input;
  if (value === null || value === undefined) return null;
  if (!Array.isArray(value)) {
    errors.push({ field, code: 'must be a list of policy statements (YAML or JSON)' });
    return null;
  }
  if (value.length > MAX_STATEMENTS) {
    errors.push({ field, code: `has more than ${MAX_STATEMENTS} statements` });
    return null;
  }
  const before = errors.length;
  const statements = value.map((s, i) => statement(s, `${field}[${i}]`, errors));
  return errors.length === before && statements.length ? statements : null;
}

/** The value of a YAML policy (null for a blank one, undefined when it is at fault). */
function fromYaml(text: string, field: string, errors: FieldError[]): unknown {
  if (!text.trim()) return null;
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    errors.push({ field, code: `is not valid YAML: ${doc.errors[0]!.message}` });
    return undefined;
  }
  let complex = false;
  visit(doc, (_key, node) => {
    if (isAlias(node) || (isNode(node) && (node.anchor !== undefined || node.tag !== undefined))) {
      complex = true;
      return visit.BREAK;
    }
    return undefined;
  });
  if (!complex) return doc.toJS();
  errors.push({ field, code: 'may only hold scalars, maps and lists (no anchors, aliases or tags)' });
  return undefined;
}

const isScalar = (v: unknown): v is ClaimScalar => v === null || ['string', 'number', 'boolean'].includes(typeof v);

function text(v: unknown): v is string {
  return typeof v === 'string' && v.trim() !== '' && v.length <= MAX_TEXT;
}

function statement(s: unknown, at: string, errors: FieldError[]): OidcStatement {
  const out: OidcStatement = { iss: '', scopes: [], claims: {} };
  if (!isRecord(s)) {
    errors.push({ field: at, code: 'must be a statement: a map of iss, scopes and claims' });
    return out;
  }
  for (const key of Object.keys(s))
    if (!STATEMENT_KEYS.includes(key)) errors.push({ field: `${at}.${key}`, code: 'is not a statement property (iss, scopes, claims)' });
  if (text(s.iss)) out.iss = s.iss;
  else errors.push({ field: `${at}.iss`, code: s.iss === undefined ? "can't be blank" : 'must be the issuer of the tokens, a URL' });
  const scopes = s.scopes;
  if (!Array.isArray(scopes) || !scopes.length) errors.push({ field: `${at}.scopes`, code: 'must list the scopes the statement grants' });
  else
    scopes.forEach((scope, j) => {
      const known = POLICY_SCOPES.find((p) => p === scope);
      if (known) out.scopes.push(known);
      else errors.push({ field: `${at}.scopes[${j}]`, code: `must be one of ${POLICY_SCOPES.join(', ')}` });
    });
  if (!isRecord(s.claims)) errors.push({ field: `${at}.claims`, code: 'must be a map of claim rules' });
  else {
    const names = Object.keys(s.claims);
    if (names.length > MAX_CLAIMS) errors.push({ field: `${at}.claims`, code: `has more than ${MAX_CLAIMS} claim rules` });
    for (const name of names.slice(0, MAX_CLAIMS)) {
      const rule = claimRule(s.claims[name], `${at}.claims.${name}`, errors);
      if (rule !== undefined) out.claims[name] = rule;
    }
  }
  return out;
}

function claimRule(rule: unknown, at: string, errors: FieldError[]): ClaimRule | undefined {
  if (isScalar(rule)) return rule;
  if (!isRecord(rule) || !Object.keys(rule).length) {
    errors.push({ field: at, code: `must be a scalar or a map of matchers (${MATCHERS.join(', ')})` });
    return undefined;
  }
  const out: ClaimMatchers = {};
  const scalarList = (v: unknown): v is ClaimScalar[] => Array.isArray(v) && v.length > 0 && v.length <= MAX_LIST && v.every(isScalar);
  for (const [matcher, arg] of Object.entries(rule)) {
    const where = `${at}.${matcher}`;
    if (matcher === 'equals' || matcher === 'not_equals') {
      if (isScalar(arg)) out[matcher] = arg;
      else errors.push({ field: where, code: 'must be a scalar (a string, number, boolean or null)' });
    } else if (matcher === 'in' || matcher === 'not_in') {
      if (scalarList(arg)) out[matcher] = arg;
      else errors.push({ field: where, code: `must be a list of 1 to ${MAX_LIST} scalars` });
    } else if (matcher === 'matches') {
      if (text(arg) || (Array.isArray(arg) && arg.length > 0 && arg.length <= MAX_LIST && arg.every(text))) out.matches = arg;
      else errors.push({ field: where, code: `must be a glob string or a list of 1 to ${MAX_LIST} of them` });
    } else errors.push({ field: where, code: `is not a matcher (${MATCHERS.join(', ')})` });
  }
  return out;
}

/** A policy as parseOidcPolicy made it and the suites table keeps it (JSON). */
export function isStoredPolicy(v: unknown): v is OidcStatement[] {
  return (
    Array.isArray(v) &&
    v.every(
      (s) => isRecord(s) && typeof s.iss === 'string' && Array.isArray(s.scopes) && s.scopes.every((x) => POLICY_SCOPES.includes(x)) && isRecord(s.claims),
    )
  );
}

/**
 * The scopes the policy grants a token of these (verified) claims: the first statement whose
 * issuer is the token's and whose every claim rule holds decides; null when none matches.
 * `ownIssuer`: this server's issuer, which `BUILDKITE_AGENT_ISSUER` stands for.
 */
export function grantedScopes(policy: readonly OidcStatement[] | null, claims: Record<string, unknown>, ownIssuer: string): PolicyScope[] | null {
  const issuer = (iss: string) => {
    const bare = iss.replace(/\/+$/, '');
    return bare === BUILDKITE_AGENT_ISSUER ? ownIssuer : bare;
  };
  for (const s of policy ?? []) {
    if (issuer(s.iss) !== claims.iss) continue;
    if (Object.entries(s.claims).every(([name, rule]) => Object.hasOwn(claims, name) && holds(rule, claims[name]))) return s.scopes;
  }
  return null;
}

/** Whether a claim's value passes a rule: every matcher of it must. */
function holds(rule: ClaimRule, value: unknown): boolean {
  if (isScalar(rule)) return value === rule;
  if (rule.equals !== undefined && value !== rule.equals) return false;
  if (rule.not_equals !== undefined && value === rule.not_equals) return false;
  if (rule.in !== undefined && !rule.in.some((v) => v === value)) return false;
  if (rule.not_in?.some((v) => v === value)) return false;
  // "only applied when the claim value is a string, and is ignored otherwise"
  if (rule.matches !== undefined && typeof value === 'string') {
    const globs = typeof rule.matches === 'string' ? [rule.matches] : rule.matches;
    if (!globs.some((g) => globMatches(g, value))) return false;
  }
  return true;
}

/**
 * A glob of the docs': `*` any run of characters (none too), `?` exactly one; nothing else is
 * special. Matched by the usual two-pointer walk (back to the last `*` on a mismatch), in time
 * proportional to the lengths' product at worst, where a regular expression can backtrack
 * exponentially on a glob of many stars.
 */
export function globMatches(glob: string, value: string): boolean {
  const g = [...glob];
  const v = [...value];
  let gi = 0;
  let vi = 0;
  let star = -1;
  let resume = 0;
  while (vi < v.length) {
    if (gi < g.length && (g[gi] === '?' || (g[gi] !== '*' && g[gi] === v[vi]))) {
      gi++;
      vi++;
    } else if (gi < g.length && g[gi] === '*') {
      star = gi++;
      resume = vi;
    } else if (star >= 0) {
      gi = star + 1;
      vi = ++resume;
    } else return false;
  }
  while (gi < g.length && g[gi] === '*') gi++;
  return gi === g.length;
}
