/**
 * One uploaded test result, checked on its own: a result that breaks a rule is rejected with
 * its position and reason, the others go on. Every body form (JSON body, multipart JSON file,
 * JUnit) comes here unchecked: the faults clients make most get the reasons below, and whatever
 * else the spec's `TestResult` schema forbids is caught by ./result-schema.
 */
import type { components } from '../../generated/api';
import { isRecord, isStringRecord } from '../core/guards';
import { isOneOf } from '../db/row-types';
import { schemaFault } from './result-schema';
import { keyUnder, tagFaultField, tagFaults } from '../suites/tag-rules';

export const MAX_RESULTS = 5000;
export const RESULTS = ['passed', 'failed', 'skipped', 'pending', 'unknown'] as const;
export type ResultValue = (typeof RESULTS)[number];

export type UploadResultError = components['schemas']['UploadResultError'];
type FailureExpanded = { expanded?: string[]; backtrace?: string[] }[];

export interface AcceptedResult {
  clientId: string | null;
  scope: string | null;
  name: string;
  location: string | null;
  fileName: string | null;
  result: ResultValue;
  failureReason: string | null;
  failureExpanded: FailureExpanded | null;
  duration: number | null;
  history: Record<string, unknown> | null;
  /** The result's own tags (null: none), over the upload's (which ingestion merges in). */
  tags: Record<string, string> | null;
}

const LIMITS = { id: 255, scope: 65536, name: 65536, location: 4096, file_name: 4096, failure_reason: 65536, line: 65536 };

class Reject extends Error {
  constructor(
    readonly field: string,
    readonly code: string,
  ) {
    super(code);
  }
}

function optionalString(r: Record<string, unknown>, field: keyof typeof LIMITS): string | null {
  const v = r[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new Reject(field, 'must be a string');
  if (v.length > LIMITS[field]) throw new Reject(field, `is too long (maximum is ${LIMITS[field]} characters)`);
  return v;
}

function stringList(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > 10_000) throw new Reject(field, 'must be a list of at most 10000 strings');
  const lines: string[] = [];
  for (const s of v) {
    if (typeof s !== 'string') throw new Reject(field, 'must be a list of strings');
    if (s.length > LIMITS.line) throw new Reject(field, `has a line longer than ${LIMITS.line} characters`);
    lines.push(s);
  }
  return lines;
}

function failureExpanded(v: unknown): FailureExpanded | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || v.length > 1000) throw new Reject('failure_expanded', 'must be a list of at most 1000 objects');
  return v.map((item, i) => {
    if (!isRecord(item)) throw new Reject(`failure_expanded[${i}]`, 'must be an object');
    const expanded = stringList(item.expanded, `failure_expanded[${i}].expanded`);
    const backtrace = stringList(item.backtrace, `failure_expanded[${i}].backtrace`);
    return { ...(expanded ? { expanded } : {}), ...(backtrace ? { backtrace } : {}) };
  });
}

function history(v: unknown): { history: Record<string, unknown> | null; duration: number | null } {
  if (v === undefined || v === null) return { history: null, duration: null };
  if (!isRecord(v)) throw new Reject('history', 'must be an object');
  const d = v.duration;
  if (d !== undefined && d !== null && (typeof d !== 'number' || !Number.isFinite(d) || d < 0))
    throw new Reject('history.duration', 'must be a number of seconds, at least 0');
  return { history: v, duration: typeof d === 'number' ? d : null };
}

/**
 * A result's own tags, by the tagging rules every tag follows (src/suites/tag-rules.ts): the
 * first fault rejects the result. The execution ends up with its upload's tags under its own, so
 * no key of either may be a dot-separated prefix of a key of the other.
 */
function executionTags(v: unknown, uploadTags: readonly string[]): Record<string, string> | null {
  const [fault] = tagFaults(v, 'upload');
  if (fault) throw new Reject(tagFaultField('tags', fault), fault.code);
  const own = isStringRecord(v) && Object.keys(v).length ? v : null;
  for (const key of Object.keys(own ?? {})) {
    const longer = keyUnder(uploadTags, key);
    if (longer !== undefined) throw new Reject(`tags.${key}`, `is a dot-separated prefix of the upload's tag key ${JSON.stringify(longer)}`);
    const shorter = uploadTags.find((u) => key.startsWith(`${u}.`));
    if (shorter !== undefined) throw new Reject(`tags.${key}`, `has the upload's tag key ${JSON.stringify(shorter)} as a dot-separated prefix`);
  }
  return own;
}

/**
 * Splits the results into the accepted ones and one error per rejected one. `scopeField`:
 * a scope is required and a missing one is reported under that name (JUnit's `classname`).
 * `offset`: the position of `data[0]` in the upload, when it is checked in batches.
 * `uploadTags`: the keys of the upload's tags, which each result's own are checked against.
 */
export function checkResults(
  data: unknown[],
  scopeField?: string,
  offset = 0,
  uploadTags: readonly string[] = [],
): { accepted: AcceptedResult[]; errors: UploadResultError[] } {
  const accepted: AcceptedResult[] = [];
  const errors: UploadResultError[] = [];
  data.forEach((item, index) => {
    const r = isRecord(item) ? item : null;
    const clientId = typeof r?.id === 'string' ? r.id.slice(0, LIMITS.id) : null;
    try {
      if (!r) throw new Reject('data', 'must be an object');
      const name = optionalString(r, 'name');
      if (name === null || name.trim() === '') throw new Reject('name', "can't be blank");
      const scope = optionalString(r, 'scope');
      if (scopeField && (scope === null || scope.trim() === '')) throw new Reject(scopeField, "can't be blank");
      const result = r.result ?? 'unknown';
      if (!isOneOf(RESULTS, result)) throw new Reject('result', `is not included in the list (${RESULTS.join(', ')})`);
      const h = history(r.history);
      const checked: AcceptedResult = {
        clientId: optionalString(r, 'id'),
        scope,
        name,
        location: optionalString(r, 'location'),
        fileName: optionalString(r, 'file_name'),
        result,
        failureReason: optionalString(r, 'failure_reason'),
        failureExpanded: failureExpanded(r.failure_expanded),
        duration: h.duration,
        history: h.history,
        tags: executionTags(r.tags, uploadTags),
      };
      const fault = schemaFault(r);
      if (fault) throw new Reject(fault.field, fault.code);
      accepted.push(checked);
    } catch (err) {
      if (!(err instanceof Reject)) throw err;
      errors.push({ index: offset + index, id: clientId, field: err.field, code: err.code });
    }
  });
  return { accepted, errors };
}
