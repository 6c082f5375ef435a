/**
 * Repository connections (read only): the organization's source-control providers from the
 * server's settings, and the repositories a GitHub or GitHub Enterprise connection reaches. For
 * administrators only. No HTTP, no SQL: pipelines are read through their service.
 */
import { BadRequestError, ForbiddenError, NotFoundError, UnprocessableError } from '../core/errors';
import type { Actor } from '../core/identity';
import { repositoryHost, repositoryPath } from '../pipelines/provider';
import type { PipelineService } from '../pipelines/service';
import type { OutboundSend } from '../security/outbound';
import { connectionsOf, type ConnectionSettings, type RepositoryConnection } from './connections';
import { listGitHubRepositories, type ProviderRateLimit, type ProviderRepository } from './github-repositories';

const PIPELINE_PAGE = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class RepositoryConnectionService {
  /** The provider's rate limit as last seen, per provider and host (the token is the server's, shared by every organization). */
  private readonly rateLimits = new Map<string, ProviderRateLimit>();

  constructor(
    private readonly settings: ConnectionSettings,
    private readonly pipelines: PipelineService,
    private readonly send: OutboundSend,
  ) {}

  private admin(actor: Actor): void {
    if (actor.role !== 'admin') throw new ForbiddenError();
  }

  list(actor: Actor): RepositoryConnection[] {
    this.admin(actor);
    return connectionsOf(actor.organization.id, this.settings);
  }

  get(actor: Actor, id: string): { connection: RepositoryConnection; rateLimit: ProviderRateLimit | null } {
    this.admin(actor);
    if (!UUID.test(id)) throw new BadRequestError('Invalid parameter connection_id: must be a UUID');
    const connection = connectionsOf(actor.organization.id, this.settings).find((c) => c.id === id.toLowerCase());
    if (!connection) throw new NotFoundError('repository connection');
    return { connection, rateLimit: this.rateLimits.get(`${connection.provider}:${connection.hostname}`) ?? null };
  }

  async repositories(actor: Actor, id: string, repository?: string): Promise<ProviderRepository[]> {
    const { connection } = this.get(actor, id);
    if (connection.provider !== 'github' && connection.provider !== 'github_enterprise') {
      throw new UnprocessableError('Listing repositories is not supported for this repository connection type');
    }
    let repos: ProviderRepository[];
    if (connection.api) {
      const listed = await listGitHubRepositories(this.send, connection.api);
      if (listed.rateLimit) this.rateLimits.set(`${connection.provider}:${connection.hostname}`, listed.rateLimit);
      repos = listed.repositories;
    } else {
      repos = await this.pipelineRepositories(actor, connection);
    }
    if (repository === undefined) return repos;
    const wanted = repository.toLowerCase();
    return repos.filter((r) => r.fullName.toLowerCase() === wanted);
  }

  /** Without the provider's API: the repositories of the organization's pipelines on the connection's host, by name, once each. */
  private async pipelineRepositories(actor: Actor, connection: RepositoryConnection): Promise<ProviderRepository[]> {
    const byName = new Map<string, ProviderRepository>();
    for (let offset = 0; ; offset += PIPELINE_PAGE) {
      const { items } = await this.pipelines.list(actor, {}, offset, PIPELINE_PAGE);
      for (const { pipeline } of items) {
        if (pipeline.providerId !== connection.provider) continue;
        // github.com's other names (www., ssh.) are GitHub's too; an Enterprise connection is its own host only.
        if (connection.provider === 'github_enterprise' && repositoryHost(pipeline.repository) !== connection.hostname) continue;
        const fullName = repositoryPath(pipeline.repository);
        if (!fullName || byName.has(fullName.toLowerCase())) continue;
        byName.set(fullName.toLowerCase(), {
          fullName,
          htmlUrl: `${connection.hostUrl}/${fullName}`,
          cloneUrl: `${connection.hostUrl}/${fullName}.git`,
          // A pipeline's default branch, or the one a new pipeline gets.
          defaultBranch: pipeline.defaultBranch || 'main',
        });
      }
      if (items.length < PIPELINE_PAGE) break;
    }
    return [...byName.values()].sort((a, b) => a.fullName.localeCompare(b.fullName));
  }
}
