/** The clusters' REST operations: clusters, their queues (with the dispatch pause) and agent tokens. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter, type OperationHandler } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializeCluster, serializeClusterMaintainer, serializeClusterQueue, serializeClusterSecret, serializeClusterToken } from './serialize';
import type { ClusterService } from './service';
import type { Cluster } from './repository';
import type { Actor } from '../core/identity';

export function clusterRoutes(service: ClusterService, publicUrl: string) {
  const api = operationRouter();

  /** Clusters as the API shows them to the caller: each with its maintainers (read in one query for all). */
  const clustersJson = async (clusters: Cluster[], actor: Actor) => {
    const [maintainers, managed] = await Promise.all([service.maintainersOf(actor, clusters), service.managedOf(actor, clusters)]);
    return clusters.map((c) => serializeCluster(c, publicUrl, actor.organization.slug, maintainers.get(c.id) ?? [], managed.has(c.id)));
  };

  api.on('listClusters', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => service.list(actor, offset, limit));
    res.json(await clustersJson(items, actor));
  });

  api.on('createCluster', async (req, res) => {
    const actor = actorOf(res);
    res.status(201).json((await clustersJson([await service.create(actor, req.body)], actor))[0]);
  });

  api.on('getCluster', async (req, res) => {
    const actor = actorOf(res);
    res.json((await clustersJson([await service.get(actor, req.params.cluster_id)], actor))[0]);
  });

  const updateClusterHandler: OperationHandler<'updateCluster'> = async (req, res) => {
    const actor = actorOf(res);
    res.json((await clustersJson([await service.update(actor, req.params.cluster_id, req.body)], actor))[0]);
  };
  api.on('updateCluster', updateClusterHandler);
  // The same operation under the method the official Go client sends.
  api.on('patchCluster', (req, res) => updateClusterHandler(req, res));

  api.on('deleteCluster', async (req, res) => {
    await service.delete(actorOf(res), req.params.cluster_id);
    res.status(204).end();
  });

  api.on('listClusterQueues', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => service.listQueues(actor, req.params.cluster_id, offset, limit));
    res.json(items.map((q) => serializeClusterQueue(q, publicUrl, actor.organization.slug)));
  });

  api.on('createClusterQueue', async (req, res) => {
    const actor = actorOf(res);
    res.status(201).json(serializeClusterQueue(await service.createQueue(actor, req.params.cluster_id, req.body), publicUrl, actor.organization.slug));
  });

  api.on('getClusterQueue', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeClusterQueue(await service.getQueue(actor, req.params.cluster_id, req.params.queue_id), publicUrl, actor.organization.slug));
  });

  const updateClusterQueueHandler: OperationHandler<'updateClusterQueue'> = async (req, res) => {
    const actor = actorOf(res);
    const queue = await service.updateQueue(actor, req.params.cluster_id, req.params.queue_id, req.body);
    res.json(serializeClusterQueue(queue, publicUrl, actor.organization.slug));
  };
  api.on('updateClusterQueue', updateClusterQueueHandler);
  // The same operation under the method the official Go client sends.
  api.on('patchClusterQueue', (req, res) => updateClusterQueueHandler(req, res));

  api.on('deleteClusterQueue', async (req, res) => {
    await service.deleteQueue(actorOf(res), req.params.cluster_id, req.params.queue_id);
    res.status(204).end();
  });

  api.on('pauseClusterQueueDispatch', async (req, res) => {
    const actor = actorOf(res);
    const queue = await service.pauseQueue(actor, req.params.cluster_id, req.params.queue_id, req.body ?? {});
    res.json(serializeClusterQueue(queue, publicUrl, actor.organization.slug));
  });

  api.on('resumeClusterQueueDispatch', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeClusterQueue(await service.resumeQueue(actor, req.params.cluster_id, req.params.queue_id), publicUrl, actor.organization.slug));
  });

  api.on('listClusterMaintainers', async (req, res) => {
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => service.listMaintainers(actorOf(res), req.params.cluster_id, offset, limit));
    res.json(items.map(serializeClusterMaintainer));
  });

  api.on('createClusterMaintainer', async (req, res) => {
    res.status(201).json(serializeClusterMaintainer(await service.createMaintainer(actorOf(res), req.params.cluster_id, req.body)));
  });

  api.on('getClusterMaintainer', async (req, res) => {
    res.json(serializeClusterMaintainer(await service.getMaintainer(actorOf(res), req.params.cluster_id, req.params.maintainer_id)));
  });

  api.on('deleteClusterMaintainer', async (req, res) => {
    await service.deleteMaintainer(actorOf(res), req.params.cluster_id, req.params.maintainer_id);
    res.status(204).end();
  });

  api.on('listClusterSecrets', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => service.listSecrets(actor, req.params.cluster_id, offset, limit));
    res.json(items.map((s) => serializeClusterSecret(s, publicUrl, actor.organization)));
  });

  api.on('createClusterSecret', async (req, res) => {
    const actor = actorOf(res);
    res.status(201).json(serializeClusterSecret(await service.createSecret(actor, req.params.cluster_id, req.body), publicUrl, actor.organization));
  });

  api.on('getClusterSecret', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeClusterSecret(await service.getSecret(actor, req.params.cluster_id, req.params.secret_id), publicUrl, actor.organization));
  });

  api.on('updateClusterSecret', async (req, res) => {
    const actor = actorOf(res);
    const secret = await service.updateSecret(actor, req.params.cluster_id, req.params.secret_id, req.body);
    res.json(serializeClusterSecret(secret, publicUrl, actor.organization));
  });

  api.on('updateClusterSecretValue', async (req, res) => {
    const actor = actorOf(res);
    const secret = await service.updateSecretValue(actor, req.params.cluster_id, req.params.secret_id, req.body.value);
    res.json(serializeClusterSecret(secret, publicUrl, actor.organization));
  });

  api.on('deleteClusterSecret', async (req, res) => {
    await service.deleteSecret(actorOf(res), req.params.cluster_id, req.params.secret_id);
    res.status(204).end();
  });

  api.on('listClusterAgentTokens', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => service.listTokens(actor, req.params.cluster_id, offset, limit));
    res.json(items.map((t) => serializeClusterToken(t, publicUrl, actor.organization.slug)));
  });

  api.on('createClusterAgentToken', async (req, res) => {
    const actor = actorOf(res);
    const { token, secret } = await service.createToken(actor, req.params.cluster_id, req.body);
    res.status(201).json({ ...serializeClusterToken(token, publicUrl, actor.organization.slug), token: secret });
  });

  api.on('getClusterAgentToken', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeClusterToken(await service.getToken(actor, req.params.cluster_id, req.params.token_id), publicUrl, actor.organization.slug));
  });

  const updateClusterAgentTokenHandler: OperationHandler<'updateClusterAgentToken'> = async (req, res) => {
    const actor = actorOf(res);
    const token = await service.updateToken(actor, req.params.cluster_id, req.params.token_id, req.body);
    res.json(serializeClusterToken(token, publicUrl, actor.organization.slug));
  };
  api.on('updateClusterAgentToken', updateClusterAgentTokenHandler);
  // The same operation under the method the official Go client sends.
  api.on('patchClusterAgentToken', (req, res) => updateClusterAgentTokenHandler(req, res));

  api.on('revokeClusterAgentToken', async (req, res) => {
    await service.revokeToken(actorOf(res), req.params.cluster_id, req.params.token_id);
    res.status(204).end();
  });

  return api.router;
}
