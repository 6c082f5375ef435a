/**
 * The rules of artifacts: what an agent may register, upload, report and find for the jobs it
 * runs, and what a REST caller may read and delete. No HTTP, no SQL. Content goes through an
 * ArtifactStorage; its URLs (the upload form's, and the content's for downloads) are signed with
 * a key derived from the service's secret and carry their expiry, so they need no token. A store
 * that serves readers and takes uploads itself (S3) gives pre-signed URLs of its own instead:
 * each artifact gets a form straight to the bucket, and its content is checked when the agent
 * reports it finished (docs/artifacts.md).
 */
import crypto from 'node:crypto';
import mime from 'mime-types';
import type { Readable } from 'node:stream';
import type { components } from '../../generated/api';
import type { Agent } from '../agents/repository';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { Job, JobContext } from '../builds/jobs/model';
import { HELD_JOB_STATES } from '../builds/states';
import type { Build } from '../builds/model';
import type { BuildService, BuildWithJobs } from '../builds/service';
import type { RuleService, RuleSubject } from '../rules/service';
import { ForbiddenError, NotFoundError, PayloadTooLargeError, RefusedError, ValidationError, type FieldError } from '../core/errors';
import type { Actor } from '../core/identity';
import type { Keys } from '../security/keys';
import { pathProblem, queryMatcher } from './paths';
import { ARTIFACT_STATES, type Artifact, type ArtifactRepository, type ArtifactState } from './repository';
import { isOneOf } from '../db/row-types';
import { ContentTooLargeError, type ArtifactStorage, type StagedContent } from './storage';
import { contentDisposition, servedAs } from './content-policy';
import { clock } from '../core/clock';
import { errorMessage } from '../core/guards';
import type { Logger } from '../http/middleware/logger';

type CreateRequest = components['schemas']['CreateArtifactsRequest'];
type StateUpdate = components['schemas']['ArtifactStateUpdate'];

export interface ArtifactSettings {
  /** Largest artifact, in bytes (ARTIFACT_MAX_FILE_BYTES). */
  maxFileBytes: number;
  /** Largest total of one job's artifacts, in bytes (ARTIFACT_MAX_JOB_BYTES). */
  maxJobBytes: number;
  /**
   * The origin the content URLs of downloads and web pages point at (ARTIFACTS_ORIGIN), e.g.
   * `https://artifacts.ci.example.com`: content there cannot reach the web pages' cookies
   * even if a browser ran it. Unset: the public URL's.
   */
  origin?: string;
}

/** 1 GiB per artifact, 10 GiB per job (ARTIFACT_MAX_FILE_BYTES, ARTIFACT_MAX_JOB_BYTES). */
export const DEFAULT_ARTIFACT_SETTINGS: ArtifactSettings = { maxFileBytes: 1024 * 1024 * 1024, maxJobBytes: 10 * 1024 * 1024 * 1024 };

/** The content type when the agent sends none and the extension says nothing (the agent's own fallback). */
export const FALLBACK_CONTENT_TYPE = 'binary/octet-stream';
/** How long the upload form's signature holds. */
export const UPLOAD_URL_SECONDS = 3600;
/** How long the REST download's URL holds (the documented 60 seconds). */
export const DOWNLOAD_URL_SECONDS = 60;
/** How long the URLs of the agent's search hold: `artifact download` fetches many files after one search. */
export const SEARCH_URL_SECONDS = 3600;

/** A URL whose signature is wrong or expired: 403 with the reason. */
export class SignedUrlError extends ForbiddenError {
  constructor(reason: string) {
    super();
    this.message = reason;
  }
}

/** A build by its pipeline and number, or by one of its jobs' ids. */
export type BuildRef = { pipelineSlug: string; number: number } | { jobId: string };

export interface UploadForm {
  batch_id?: string;
  path?: string;
  expires?: string;
  signature?: string;
}

export interface UploadInstructions {
  action: { url: string; method: 'POST'; path: string; file_input: string };
  data: Record<string, string>;
}

export interface SignedQuery {
  expires: number;
  signature: string;
}

/** Where a download goes: the local file, and how to describe it. */
export interface Content {
  file: string;
  contentType: string;
  size: number;
  filename: string;
}

/** How staged content differs from what the artifact was registered with, or null when it is the same. */
function mismatch(artifact: Artifact, staged: Pick<StagedContent, 'size' | 'sha1' | 'sha256'>): string | null {
  if (staged.size !== artifact.fileSize) return `has ${staged.size} bytes, but the artifact was registered with ${artifact.fileSize}`;
  if (staged.sha1 !== artifact.sha1sum) return `has the SHA-1 ${staged.sha1}, but the artifact was registered with ${artifact.sha1sum}`;
  if (artifact.sha256sum && staged.sha256 !== artifact.sha256sum)
    return `has the SHA-256 ${staged.sha256}, but the artifact was registered with ${artifact.sha256sum}`;
  return null;
}

const equal = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The artifact lists' `state` and `path` query parameters, as sent. */
export interface ArtifactListFilter {
  state?: string;
  path?: string;
}

/** An unknown state is a 422, as the real API's lists answer it. */
function listFilter(f: ArtifactListFilter): { state?: ArtifactState; path?: string } {
  if (f.state !== undefined && !isOneOf(ARTIFACT_STATES, f.state)) {
    throw ValidationError.field('state', `is not one of ${ARTIFACT_STATES.join(', ')}`);
  }
  return { state: f.state, path: f.path };
}

export class ArtifactService {
  constructor(
    private readonly artifacts: ArtifactRepository,
    private readonly storage: ArtifactStorage,
    private readonly builds: BuildService,
    private readonly work: AgentWorkService,
    private readonly keys: Keys,
    readonly settings: ArtifactSettings,
    private readonly rules: RuleService,
    private readonly logger: Logger,
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Signatures

  private sign(purpose: string, id: string, expires: number): string {
    return this.keys.derive(purpose, `${id}\0${expires}`, 64);
  }

  private check(purpose: string, id: string, expires: number, signature: string): void {
    if (!equal(signature, this.sign(purpose, id, expires))) throw new SignedUrlError('The signature of this URL is not valid');
    if (expires * 1000 < clock.now().getTime()) throw new SignedUrlError('This URL has expired');
  }

  /** The origins, other than Windsock's own, that content is served from (ARTIFACTS_ORIGIN, an S3 store's bucket): the pages' images may come from them. */
  get contentOrigins(): string[] {
    return [this.settings.origin, this.storage.readOrigin].filter((o): o is string => o !== undefined);
  }

  /** The content's URL for people and REST clients: on the artifacts origin when one is set, else on `publicUrl`. */
  publicContentUrl(publicUrl: string, artifact: Artifact, seconds: number): Promise<string> {
    return this.contentUrl(this.settings.origin ?? publicUrl, artifact, seconds);
  }

  /**
   * The content's URL, valid for `seconds`: the store's pre-signed URL when it serves readers
   * itself (with the headers the content policy gives this artifact), else Windsock's signed
   * `/artifact-content/` URL on `publicUrl`.
   */
  async contentUrl(publicUrl: string, artifact: Artifact, seconds: number): Promise<string> {
    if (this.storage.signedUrl && artifact.contentSha256) {
      const served = servedAs(artifact.contentType);
      return this.storage.signedUrl(
        artifact.contentSha256,
        {
          contentType: served.contentType,
          contentDisposition: contentDisposition(served.disposition, artifact.path.slice(artifact.path.lastIndexOf('/') + 1)),
          cacheControl: `private, max-age=${Math.min(seconds, DOWNLOAD_URL_SECONDS)}`,
        },
        seconds,
      );
    }
    const expires = Math.floor(clock.now().getTime() / 1000) + seconds;
    return `${publicUrl}/artifact-content/${artifact.id}?expires=${expires}&signature=${this.sign('artifact-content', artifact.id, expires)}`;
  }

  // ---------------------------------------------------------------------------------------------
  // The agent's side

  /** The job, if this agent runs it now (another agent's job, or a finished one, is as good as missing). */
  private async running(agent: Agent, jobId: string): Promise<JobContext> {
    const context = await this.work.job(agent, jobId);
    if (!HELD_JOB_STATES.includes(context.job.state)) throw new NotFoundError('job');
    return context;
  }

  /**
   * Registers a batch: every path checked, the sizes within the limits, the records `new`. The
   * agent's batch id seen again answers the batch it made (the agent retries a create whose
   * answer it lost).
   */
  async create(
    agent: Agent,
    jobId: string,
    body: CreateRequest,
    publicUrl: string,
  ): Promise<{ id: string; artifactIds: string[]; instructions: UploadInstructions; perArtifact: Record<string, UploadInstructions> }> {
    const { job } = await this.running(agent, jobId);
    const clientBatchId = body.id ? body.id : null;
    if (clientBatchId) {
      const earlier = await this.artifacts.byClientBatch(job.id, clientBatchId);
      if (earlier.length)
        return {
          id: clientBatchId,
          artifactIds: earlier.map((a) => a.id),
          instructions: this.instructions(earlier[0]!.batchId, publicUrl),
          perArtifact: await this.directInstructions(earlier.filter((a) => a.state === 'new' && a.contentSha256 === null)),
        };
    }
    const errors: FieldError[] = [];
    if (body.upload_destination) errors.push({ field: 'upload_destination', code: 'is not supported: Windsock stores artifacts itself (send "")' });
    body.artifacts.forEach((a, i) => {
      const problem = pathProblem(a.path);
      if (problem) errors.push({ field: `artifacts[${i}].path`, code: problem });
      if (a.file_size > this.settings.maxFileBytes) {
        errors.push({ field: `artifacts[${i}].file_size`, code: `is larger than the limit of ${this.settings.maxFileBytes} bytes per artifact` });
      }
    });
    if (errors.length) throw new ValidationError(errors);
    const batchBytes = body.artifacts.reduce((sum, a) => sum + a.file_size, 0);
    const used = await this.artifacts.jobBytes(job.id);
    if (used + batchBytes > this.settings.maxJobBytes) {
      throw new PayloadTooLargeError(
        `These artifacts (${batchBytes} bytes) would take the job's artifacts over the limit of ${this.settings.maxJobBytes} bytes (${used} bytes used)`,
      );
    }
    const batchId = crypto.randomUUID();
    const now = clock.now();
    const made: Artifact[] = body.artifacts.map((a, i) => ({
      id: crypto.randomUUID(),
      jobId: job.id,
      buildId: job.buildId,
      batchId,
      clientBatchId,
      batchIndex: i,
      state: 'new',
      path: a.path,
      contentType: a.content_type || mime.lookup(a.path) || FALLBACK_CONTENT_TYPE,
      fileSize: a.file_size,
      sha1sum: a.sha1sum.toLowerCase(),
      sha256sum: a.sha256sum ? a.sha256sum.toLowerCase() : null,
      contentSha256: null,
      createdAt: now,
      finishedAt: null,
      deletedAt: null,
    }));
    await this.artifacts.insertMany(made);
    return {
      id: clientBatchId ?? batchId,
      artifactIds: made.map((a) => a.id),
      instructions: this.instructions(batchId, publicUrl),
      perArtifact: await this.directInstructions(made),
    };
  }

  /**
   * With a store that takes uploads itself, each artifact's own form: a POST straight to the
   * bucket under the artifact's id, for exactly its declared size (the agent prefers these to the
   * batch's form through Windsock, which still works). None with the disk store.
   */
  private async directInstructions(artifacts: Artifact[]): Promise<Record<string, UploadInstructions>> {
    const out: Record<string, UploadInstructions> = {};
    if (!this.storage.directUpload) return out;
    for (const a of artifacts) {
      const form = await this.storage.directUpload(a.id, a.fileSize, UPLOAD_URL_SECONDS);
      const url = new URL(form.url);
      out[a.id] = { action: { url: url.origin, method: 'POST', path: url.pathname, file_input: 'file' }, data: form.fields };
    }
    return out;
  }

  /** One form POST per artifact to the upload route; `${artifact:path}` is the agent's to fill in. */
  private instructions(batchId: string, publicUrl: string): UploadInstructions {
    const expires = Math.floor(clock.now().getTime() / 1000) + UPLOAD_URL_SECONDS;
    return {
      action: { url: publicUrl, method: 'POST', path: '/artifact-uploads', file_input: 'file' },
      data: { batch_id: batchId, path: '${artifact:path}', expires: String(expires), signature: this.sign('artifact-upload', batchId, expires) },
    };
  }

  /** The most a single upload may hold before it is refused. */
  get uploadLimit(): number {
    return this.settings.maxFileBytes;
  }

  /** Stages an uploaded file's bytes; over the per-file limit is a 413 and nothing remains. */
  async stage(source: Readable): Promise<StagedContent> {
    try {
      return await this.storage.stage(source, this.settings.maxFileBytes);
    } catch (err) {
      if (err instanceof ContentTooLargeError)
        throw new PayloadTooLargeError(`The file is larger than the limit of ${this.settings.maxFileBytes} bytes per artifact`);
      throw err;
    }
  }

  /**
   * The upload form's content for the artifact its batch and path name: kept only when the
   * signature holds and the bytes are what the agent declared (size, SHA-1, SHA-256 when sent).
   * Whatever is refused is discarded from staging.
   */
  async upload(form: UploadForm, staged: StagedContent | undefined): Promise<void> {
    try {
      if (!staged) throw ValidationError.field('file', "can't be blank");
      const expires = Number(form.expires);
      if (!form.batch_id || !form.signature || !/^\d{1,11}$/.test(form.expires ?? '')) throw new SignedUrlError('The upload form is not signed');
      this.check('artifact-upload', form.batch_id, expires, form.signature);
      const candidates = await this.artifacts.inBatchWithPath(form.batch_id, form.path ?? '');
      const artifact = candidates.find((a) => a.state === 'new' && a.contentSha256 === null) ?? candidates.find((a) => a.contentSha256 === staged.sha256);
      if (!artifact) throw new NotFoundError('artifact');
      const problem = mismatch(artifact, staged);
      if (problem) throw ValidationError.field('file', problem);
      if (artifact.contentSha256 === staged.sha256) return await staged.discard(); // the same upload again
      await staged.commit();
      await this.artifacts.setContent(artifact.id, staged.sha256);
    } catch (err) {
      await staged?.discard();
      throw err;
    }
  }

  /**
   * The agent's report of its uploads, all or nothing: `finished` needs uploaded content;
   * every artifact must be one of this job's, not deleted.
   */
  async updateStates(agent: Agent, jobId: string, updates: StateUpdate[]): Promise<Artifact[]> {
    const { job } = await this.running(agent, jobId);
    const found = new Map((await this.artifacts.byIds(updates.map((u) => u.id))).map((a) => [a.id, a]));
    const errors: FieldError[] = [];
    for (const [i, u] of updates.entries()) {
      const a = found.get(u.id);
      if (!a || a.jobId !== job.id || a.state === 'deleted') errors.push({ field: `artifacts[${i}].id`, code: 'is not an artifact of this job' });
      else if (u.state === 'finished' && a.contentSha256 === null) {
        const problem = await this.claimDirectUpload(a);
        if (problem) errors.push({ field: `artifacts[${i}].state`, code: problem });
      }
    }
    if (errors.length) throw new ValidationError(errors);
    const now = clock.now();
    for (const state of ['finished', 'error'] as const) {
      await this.artifacts.setState(
        updates.filter((u) => u.state === state).map((u) => u.id),
        state,
        now,
      );
    }
    return this.artifacts.byIds(updates.map((u) => u.id));
  }

  /**
   * An artifact's direct upload to the store, read back and checked as an upload through Windsock
   * is (size, SHA-1, SHA-256 when declared), then put at its content address; refused content is
   * deleted. Answers why it is refused, or null once the artifact has its content.
   */
  private async claimDirectUpload(artifact: Artifact): Promise<string | null> {
    const unfinished = 'is finished, but no content was uploaded';
    if (!this.storage.stageDirect) return unfinished;
    let staged: StagedContent | null;
    try {
      staged = await this.storage.stageDirect(artifact.id, artifact.fileSize, this.settings.maxFileBytes);
      const problem = staged && mismatch(artifact, staged);
      if (staged && problem) {
        await staged.discard();
        return `is finished, but the uploaded content ${problem}`;
      }
      await staged?.commit();
    } catch (err) {
      // A report of the same artifact sent at the same time (the agent's retry after its timeout)
      // may have moved the upload while this one read or copied it; a store need not answer that
      // with a clean "not found" (s3rver answers 500 to a copy whose source goes meanwhile).
      if (await this.contentRecorded(artifact.id)) return null;
      throw err;
    }
    // Nothing there: never uploaded, or that other report took it (it records the content before it removes the upload).
    if (!staged) return (await this.contentRecorded(artifact.id)) ? null : unfinished;
    await this.artifacts.setContent(artifact.id, staged.sha256);
    // Only now: a report of the same artifact sent meanwhile finds the upload or the content, never
    // neither. The artifact is finished from here on: an upload that cannot be removed stays behind,
    // said in the log, and does not fail the report.
    try {
      await staged.discard();
    } catch (err) {
      this.logger.warn({ artifact: artifact.id, reason: errorMessage(err) }, "an artifact's direct upload could not be removed after its content was kept");
    }
    return null;
  }

  private async contentRecorded(id: string): Promise<boolean> {
    return Boolean((await this.artifacts.findById(id))?.contentSha256);
  }

  /**
   * The agent's search of a build one of whose jobs it runs. `scope`: a step key, a step label
   * or a job id. Newest first; of the same path only the newest unless `includeDuplicates`;
   * only the latest attempt of retried jobs unless `includeRetried`.
   */
  async search(
    agent: Agent,
    buildId: string,
    q: { query?: string; scope?: string; state?: 'new' | 'error' | 'finished'; includeRetried?: boolean; includeDuplicates?: boolean },
  ): Promise<Artifact[]> {
    if (!agent.jobId) throw new NotFoundError('build');
    const context = await this.work.job(agent, agent.jobId).catch(() => null);
    if (!context) throw new NotFoundError('build');
    const found = await this.builds.findWithJobsById(buildId);
    if (!found || found.build.organizationId !== context.organizationId) throw new NotFoundError('build');
    if (found.build.id !== context.build.id) await this.mayReadAcross(context.build.id, found.build, q.query);
    let jobs: Job[] = found.jobs;
    if (q.scope) {
      jobs = jobs.filter((j) => j.id === q.scope || j.stepKey === q.scope || j.name === q.scope);
      if (jobs.length === 0) throw new NotFoundError(`step matching: \`${q.scope}\``);
    }
    if (!q.includeRetried) jobs = jobs.filter((j) => !j.retried);
    const jobIds = new Set(jobs.map((j) => j.id));
    const matches = q.query ? queryMatcher(q.query) : () => true;
    const newestFirst = (await this.artifacts.ofBuild(buildId, q.state)).filter((a) => jobIds.has(a.jobId) && matches(a.path)).reverse();
    if (q.includeDuplicates) return newestFirst;
    const seen = new Set<string>();
    return newestFirst.filter((a) => !seen.has(a.path) && seen.add(a.path));
  }

  /**
   * Another build of the organization (`buildkite-agent artifact download --build`): one of the
   * job's own pipeline, or of a pipeline in its cluster, is readable; across clusters a
   * `pipeline.artifacts_read.pipeline` rule must allow it (src/rules/policy.ts), a 403 saying
   * why otherwise.
   */
  private async mayReadAcross(ownBuildId: string, target: Build, query: string | undefined): Promise<void> {
    const own = await this.builds.findWithJobsById(ownBuildId);
    if (!own) throw new NotFoundError('build');
    if (own.build.pipelineId === target.pipelineId) return;
    // Every variable of both builds (`source.build.creator.teams`, `target.build.env("X")`...), read only where a rule names one.
    const subject = (b: Build): RuleSubject => ({
      pipelineId: b.pipelineId,
      branch: b.branch,
      commit: b.commit,
      message: b.message,
      source: b.source,
      facts: (pipeline, want) => this.builds.storedBuildConditions(b, pipeline, want),
    });
    const refusal = await this.rules.artifactsReadRefusal(subject(own.build), subject(target), query ?? null);
    if (refusal) throw new RefusedError(refusal);
  }

  // ---------------------------------------------------------------------------------------------
  // The REST side

  /**
   * The build (its jobs, retried ones too) as the caller may read it, named by its pipeline and
   * number, or by one of its jobs (the organization-scoped paths).
   */
  private build(actor: Actor, where: BuildRef): Promise<BuildWithJobs> {
    return 'jobId' in where ? this.builds.getByJobId(actor, where.jobId) : this.builds.get(actor, where.pipelineSlug, where.number, true, { pipeline: true });
  }

  async listByBuild(actor: Actor, pipelineSlug: string, number: number, filter: ArtifactListFilter, offset: number, limit: number) {
    const item = await this.build(actor, { pipelineSlug, number });
    return { item, ...(await this.artifacts.page({ build_id: item.build.id }, listFilter(filter), offset, limit)) };
  }

  async listByJob(actor: Actor, where: BuildRef, jobId: string, filter: ArtifactListFilter, offset: number, limit: number) {
    const item = await this.build(actor, where);
    if (!item.jobs.some((j) => j.id === jobId)) throw new NotFoundError('job');
    return { item, ...(await this.artifacts.page({ job_id: jobId }, listFilter(filter), offset, limit)) };
  }

  /** One artifact of the job, not deleted. */
  async get(actor: Actor, where: BuildRef, jobId: string, id: string): Promise<{ item: BuildWithJobs; artifact: Artifact }> {
    const item = await this.build(actor, where);
    if (!item.jobs.some((j) => j.id === jobId)) throw new NotFoundError('job');
    const artifact = await this.artifacts.findById(id);
    if (!artifact || artifact.jobId !== jobId || artifact.state === 'deleted') throw new NotFoundError('artifact');
    return { item, artifact };
  }

  /** An artifact whose content can be downloaded (uploaded, not deleted). */
  async downloadable(actor: Actor, where: BuildRef, jobId: string, id: string): Promise<Artifact> {
    const { artifact } = await this.get(actor, where, jobId, id);
    if (!artifact.contentSha256) throw new NotFoundError('artifact');
    return artifact;
  }

  /**
   * The artifact an annotation's `artifact://path` names in a build the caller may read: the
   * newest uploaded one with that path, whichever job uploaded it (as `artifact download` picks).
   */
  async downloadableByPath(actor: Actor, where: { pipelineSlug: string; number: number }, path: string): Promise<Artifact> {
    const item = await this.build(actor, where);
    const artifact = await this.artifacts.newestFinishedWithPath(item.build.id, path);
    if (!artifact) throw new NotFoundError('artifact');
    return artifact;
  }

  /**
   * The record stays (`deleted`); the content goes once no other artifact uses it. The content is
   * removed first: a store that cannot be reached (a 503) leaves the artifact as it was, so the
   * delete can be sent again, rather than a deleted record whose content nothing points at.
   */
  async delete(actor: Actor, where: BuildRef, jobId: string, id: string): Promise<void> {
    const { item, artifact } = await this.get(actor, where, jobId, id);
    if (!item.perms.build) throw new ForbiddenError();
    const content = artifact.contentSha256;
    if (content && !(await this.artifacts.contentInUse(content, artifact.id))) await this.storage.remove(content);
    await this.artifacts.markDeleted(artifact.id, clock.now());
  }

  /** The content a signed URL names. */
  async content(id: string, q: SignedQuery): Promise<Content> {
    this.check('artifact-content', id, q.expires, q.signature);
    const artifact = await this.artifacts.findById(id);
    const file = artifact?.contentSha256 && artifact.state !== 'deleted' ? await this.storage.localPath(artifact.contentSha256) : null;
    if (!artifact || !file) throw new NotFoundError('artifact');
    return { file, contentType: artifact.contentType, size: artifact.fileSize, filename: artifact.path.slice(artifact.path.lastIndexOf('/') + 1) };
  }
}
