/**
 * A cluster secret's access policy (docs: pipelines/security/secrets/buildkite_secrets/access_policies):
 * a YAML list of rules, each a map of claims to a condition or a list of conditions. A job may
 * read the secret when every claim of at least one rule holds for it; a claim holds when one of
 * its conditions matches the job's value (`*` matches any run of characters, as in
 * `gh-readonly-queue/*`). No policy: every job of the cluster may read. Pure.
 */
import YAML from 'yaml';
import { isOneOf } from '../db/row-types';

export const POLICY_CLAIMS = [
  'pipeline_id',
  'pipeline_slug',
  'build_source',
  'build_branch',
  'build_creator',
  'build_creator_team',
  'cluster_queue_id',
  'cluster_queue_key',
] as const;
export type PolicyClaim = (typeof POLICY_CLAIMS)[number];
export type Policy = Partial<Record<PolicyClaim, string[]>>[];

/** What a job is, claim by claim: one value each, several for the creator's teams. */
export type JobClaims = Record<PolicyClaim, string[]>;

/** The policy, or why it is not one (a message for the `policy` field). */
export function parsePolicy(text: string): Policy | { error: string } {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    return { error: `is not a valid YAML document: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` };
  }
  if (!Array.isArray(doc) || doc.length === 0) return { error: 'must be a list of rules (each beginning with "-")' };
  const rules: Policy = [];
  for (const [i, rule] of doc.entries()) {
    if (!rule || typeof rule !== 'object' || Array.isArray(rule) || Object.keys(rule).length === 0)
      return { error: `rule ${i + 1} must be a map of claims to conditions` };
    const parsed: Partial<Record<PolicyClaim, string[]>> = {};
    for (const [claim, value] of Object.entries(rule)) {
      if (!isOneOf(POLICY_CLAIMS, claim)) return { error: `rule ${i + 1}: unknown claim "${claim}" (one of ${POLICY_CLAIMS.join(', ')})` };
      const conditions = Array.isArray(value) ? value : [value];
      if (!conditions.length || conditions.some((c) => typeof c !== 'string' && typeof c !== 'number'))
        return { error: `rule ${i + 1}: the conditions of "${claim}" must be a string or a list of strings` };
      parsed[claim] = conditions.map(String);
    }
    rules.push(parsed);
  }
  return rules;
}

function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(value);
}

/** Whether a job with these claims may read under `policy` (null: any job may). */
export function policyAllows(policy: Policy | null, job: JobClaims): boolean {
  if (!policy) return true;
  return policy.some((rule) => POLICY_CLAIMS.every((claim) => rule[claim]?.some((c) => job[claim].some((v) => globMatches(c, v))) ?? true));
}
