/** An organization's repository connections (REST, read only): thin handlers. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { serializeConnection, serializeConnectionRepository, serializeConnectionSummary } from './serialize';
import type { RepositoryConnectionService } from './service';

export function repositoryConnectionRoutes(connections: RepositoryConnectionService, publicUrl: string) {
  const api = operationRouter();

  api.on('listRepositoryConnections', async (_req, res) => {
    const actor = actorOf(res);
    res.json(connections.list(actor).map((c) => serializeConnectionSummary(c, actor.organization.slug, publicUrl)));
  });
  api.on('getRepositoryConnection', async (req, res) => {
    const actor = actorOf(res);
    const { connection, rateLimit } = connections.get(actor, req.params.connection_id);
    res.json(serializeConnection(connection, rateLimit, actor.organization.slug, publicUrl));
  });
  api.on('listRepositoryConnectionRepositories', async (req, res) => {
    const actor = actorOf(res);
    const repos = await connections.repositories(actor, req.params.connection_id, req.query.repository);
    res.json(repos.map(serializeConnectionRepository));
  });

  return api.router;
}
