/**
 * A build's meta-data as `buildkite-agent meta-data` reads and writes it through the agent API:
 * the agent names a job it runs (the job's build is the store) or, for reads, a build of its
 * organization by id. Writes go through build progression, under the build's row lock, into
 * both the meta-data table (the builds list's `meta_data[key]=value` filter) and the build's own
 * copy (`build.meta_data`), the same path a block step's fields take. No HTTP, no SQL.
 *
 * Limits (the contract's `meta_data` of a build): a key is 1 to 255 characters, a value at most
 * 102,400 (the docs: 'restricted to a maximum of 100 kilobytes'), neither may be blank (the
 * agent refuses blank ones too), and a build holds at most 1,000 keys (the docs set no number:
 * a per-file timing written with `set-batch` is many keys; the cap bounds a build's own copy).
 */
import type { Agent } from '../agents/repository';
import { mustBeConnected } from '../agents/service';
import { NotFoundError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { AgentWorkService } from './jobs/agent-work';
import type { BuildProgress } from './progress/service';
import type { BuildRepository } from './repository';

export const MAX_META_DATA_KEYS = 1_000;
export const MAX_META_DATA_KEY_LENGTH = 255;
export const MAX_META_DATA_VALUE_LENGTH = 102_400;

export interface MetaDataItem {
  key: string;
  value: string;
}

export class MetaDataService {
  constructor(
    private readonly builds: BuildRepository,
    private readonly progress: BuildProgress,
    private readonly work: AgentWorkService,
  ) {}

  /** The build of the job the agent runs, or of another job of that build (`--job`). */
  async buildOfJob(agent: Agent, jobId: string): Promise<string> {
    return (await this.work.jobOfRunningBuild(agent, jobId)).build.id;
  }

  /** A build of the agent's organization, by id (`--build`): 404 for any other. */
  async buildById(agent: Agent, buildId: string): Promise<string> {
    mustBeConnected(agent);
    const build = await this.builds.findById(buildId);
    if (!build || build.organizationId !== agent.organizationId) throw new NotFoundError('build');
    return build.id;
  }

  /** Sets every item on the build, or none (the later of two items with one key wins). */
  async set(buildId: string, items: MetaDataItem[]): Promise<void> {
    const errors: FieldError[] = [];
    items.forEach((item, i) => {
      const at = items.length > 1 ? `items[${i}].` : '';
      if (!item.key.trim()) errors.push({ field: `${at}key`, code: "can't be blank" });
      else if (item.key.length > MAX_META_DATA_KEY_LENGTH)
        errors.push({ field: `${at}key`, code: `is too long (maximum is ${MAX_META_DATA_KEY_LENGTH} characters)` });
      if (!item.value.trim()) errors.push({ field: `${at}value`, code: "can't be blank" });
      else if (item.value.length > MAX_META_DATA_VALUE_LENGTH)
        errors.push({ field: `${at}value`, code: `is too long (maximum is ${MAX_META_DATA_VALUE_LENGTH} characters)` });
    });
    if (errors.length) throw new ValidationError(errors);
    const fields = Object.fromEntries(items.map((i) => [i.key, i.value]));
    const done = await this.progress.setMetaData(buildId, fields, MAX_META_DATA_KEYS);
    if (done === null) throw new NotFoundError('build');
    if (!done) throw new UnprocessableError(`A build can't have more than ${MAX_META_DATA_KEYS} meta-data keys.`);
  }

  /** The value of `key`: 404 when the build has none. */
  async get(buildId: string, key: string): Promise<string> {
    const all = await this.builds.metaDataOf(buildId);
    if (!has(all, key)) throw new NotFoundError('meta-data key');
    return all[key]!;
  }

  async exists(buildId: string, key: string): Promise<boolean> {
    return has(await this.builds.metaDataOf(buildId), key);
  }

  /** The build's keys, sorted. */
  async keys(buildId: string): Promise<string[]> {
    return Object.keys(await this.builds.metaDataOf(buildId)).sort();
  }
}

/** Own keys only: `constructor` is no key of a build's meta-data. */
function has(metaData: Record<string, string>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(metaData, key);
}
