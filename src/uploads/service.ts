/**
 * The Test Engine upload API: who is uploading (a suite's API token), the body forms (JSON,
 * multipart JSON file, a test runner's own JSON report, JUnit) reduced to one list of results, each result
 * checked on its own, and the accepted ones ingested. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { SuiteTokenError, ValidationError } from '../core/errors';
import { clock } from '../core/clock';
import { fieldOf } from '../core/guards';
import { findNul, NUL_CODE } from '../http/middleware/nul';
import type { Suite } from '../suites/repository';
import type { SuiteService } from '../suites/service';
import { suiteOfUrl, suiteUrls } from '../suites/serialize';
import { grantedScopes, UPLOAD_SCOPE } from '../suites/oidc-policy';
import type { OidcIssuer } from '../security/oidc';
import { tagFaultField, tagFaults } from '../suites/tag-rules';
import { parseUploadJson } from './json';
import { parseJUnit } from './junit';
import { NATIVE_FORMATS, nativeResults, type NativeFormat } from './native';
import type { RunEnvFields, UploadRepository } from './repository';
import { RESULT_BATCH, yieldToEventLoop } from './event-loop';
import { checkResults, MAX_RESULTS, type AcceptedResult, type UploadResultError } from './results';

type RunEnv = components['schemas']['RunEnv'];
type Accepted = components['schemas']['UploadAccepted'];

export interface Uploader {
  suite: Suite;
  orgSlug: string;
}

// `Token token="..."`, what buildkite-test-collector sends and the Test Engine docs show
// (importing_json.md), or `Token token=...` unquoted, what bktec sends
// (test-engine-client, internal/api/upload_test_results.go). Only those two: the bare,
// half-quoted and lowercase forms are no client's, and a lenient parse of a credential only
// widens what is accepted. The token is a suite's API token, or an OIDC token (a JWT: three
// base64url parts joined by dots) in the same place (test_collection/oidc.md).
const TOKEN = /^Token token=(?:"([A-Za-z0-9_.-]{1,8192})"|([A-Za-z0-9_.-]{1,8192}))$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export class UploadService {
  constructor(
    private readonly suites: SuiteService,
    private readonly uploads: UploadRepository,
    private readonly publicUrl: string,
    /** The issuer of this server's agents' OIDC tokens, which a suite's policy may let upload. */
    private readonly oidc: OidcIssuer,
  ) {}

  async authenticate(header: string | undefined): Promise<Uploader> {
    const match = header ? TOKEN.exec(header.trim()) : null;
    if (!match) throw new SuiteTokenError('missing or malformed suite token');
    const token = (match[1] ?? match[2])!;
    if (JWT.test(token)) return this.authenticateOidc(token);
    const found = await this.suites.findByUploadToken(token);
    if (!found) throw new SuiteTokenError('unknown suite token');
    return found;
  }

  /**
   * An OIDC token (test_collection/oidc.md): one this server's issuer signed and that holds now,
   * whose audience is a suite's URL (`--audience "$SUITE_URL"`, the suite's web_url), and whose
   * claims that suite's policy grants `write_uploads`. Every refusal is the same 401.
   */
  private async authenticateOidc(token: string): Promise<Uploader> {
    const refused = new SuiteTokenError('an OIDC token the suite’s OIDC policy does not allow to upload');
    const claims = this.oidc.verify(token, Math.floor(clock.nowMs() / 1000));
    if (!claims) throw refused;
    for (const audience of [claims.aud].flat()) {
      const slugs = typeof audience === 'string' ? suiteOfUrl(this.publicUrl, audience) : null;
      const found = slugs && (await this.suites.findBySlugs(slugs.orgSlug, slugs.suiteSlug));
      if (found && grantedScopes(found.suite.oidcPolicy, claims, this.oidc.issuer)?.includes(UPLOAD_SCOPE)) return found;
    }
    throw refused;
  }

  /** A JSON body: shaped by the spec but for its results, which are checked here one by one. */
  async uploadJson(who: Uploader, body: Omit<components['schemas']['UploadRequest'], 'data'> & { data: unknown[] }, nulFree = false): Promise<Accepted> {
    return this.ingest(who, body.run_env, body.tags ?? {}, resultList(body.data), undefined, nulFree);
  }

  /** A multipart body: `data` is a JSON array of results or a JUnit document. */
  async uploadFile(who: Uploader, fields: components['schemas']['UploadMultipartRequest'], data: Buffer): Promise<Accepted> {
    if (fields.format === 'junit') return this.ingest(who, fields.run_env, fields.tags ?? {}, parseJUnit(data), 'classname');
    // Off the event loop when large, and checked for depth (the body checks of app.ts never see this file).
    const result = await parseUploadJson(data);
    if (!result.ok)
      throw ValidationError.field('data', result.reason.startsWith('nested deeper') ? `is ${result.reason}` : `is not valid JSON: ${result.reason}`);
    if (isNativeFormat(fields.format))
      return this.ingest(who, fields.run_env, fields.tags ?? {}, resultList(nativeResults(fields.format, result.value)), undefined, !result.mayHoldNul);
    if (!Array.isArray(result.value)) throw ValidationError.field('data', 'must be a JSON array of test results');
    return this.ingest(who, fields.run_env, fields.tags ?? {}, resultList(result.value), undefined, !result.mayHoldNul);
  }

  private async ingest(who: Uploader, env: RunEnv, tags: Record<string, string>, data: unknown[], scopeField?: string, nulFree = false): Promise<Accepted> {
    // The upload's tags apply to each of its results, so they follow the rules a result's own
    // tags do (tags.md: "Up to 10 tags may be specified at the upload level", no `mut.` keys);
    // unlike a result, the upload as a whole is refused, before any result is looked at.
    const tagErrors = tagFaults(tags, 'upload').map((f) => ({ field: tagFaultField('tags', f), code: f.code }));
    if (tagErrors.length) throw new ValidationError(tagErrors);
    // A file (JSON, or JUnit with `&#0;`) can carry NUL, which Postgres cannot store. Both
    // passes go in batches, with a turn of the event loop between them.
    for (let start = 0; !nulFree && start < data.length; start += RESULT_BATCH) {
      if (start) await yieldToEventLoop();
      for (let i = start; i < Math.min(data.length, start + RESULT_BATCH); i++) {
        const nul = findNul(data[i], `data[${i}]`);
        if (nul !== null) throw ValidationError.field(nul, NUL_CODE);
      }
    }
    const accepted: AcceptedResult[] = [];
    const errors: UploadResultError[] = [];
    for (let start = 0; start < data.length; start += RESULT_BATCH) {
      await yieldToEventLoop();
      const checked = checkResults(data.slice(start, start + RESULT_BATCH), scopeField, start, Object.keys(tags));
      accepted.push(...checked.accepted);
      errors.push(...checked.errors);
    }
    const run = await this.uploads.ingest(who.suite.id, runEnvFields(env), tags, accepted, clock.now());
    return {
      id: crypto.randomUUID(),
      run_id: run.id,
      queued: accepted.length,
      skipped: errors.length,
      errors,
      run_url: `${suiteUrls(this.publicUrl, who.orgSlug, who.suite.slug).web}/runs/${run.id}`,
    };
  }
}

const isNativeFormat = (format: string): format is NativeFormat => (NATIVE_FORMATS as readonly string[]).includes(format);

function resultList(data: unknown[]): unknown[] {
  if (data.length > MAX_RESULTS) throw ValidationError.field('data', `has more than ${MAX_RESULTS} results: split them into several uploads`);
  return data;
}

function runEnvFields(env: RunEnv): RunEnvFields {
  // Multipart forms as the Buildkite docs show them send `run_env[CI]`.
  const s = (v: unknown) => (v === undefined || v === null || v === '' ? null : String(v));
  return {
    key: env.key,
    ci: s(env.ci ?? fieldOf(env, 'CI')),
    branch: s(env.branch),
    commitSha: s(env.commit_sha),
    number: s(env.number),
    jobId: s(env.job_id),
    message: s(env.message),
    url: s(env.url),
    collector: s(env.collector),
    version: s(env.version),
    testRunner: s(env.test_runner),
  };
}
