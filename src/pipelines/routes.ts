/** Pipelines: thin handlers from the validated request to the service and back through serialize. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { countedPage } from '../http/responses/pagination';
import { setWarnings } from '../http/responses/warning';
import { serializeGithubWebhookProcessing, serializePipeline } from './serialize';
import type { PipelineService } from './service';
import type { Pipeline } from './repository';
import type { Actor, Permissions } from '../core/identity';

export function pipelineRoutes(service: PipelineService, publicUrl: string) {
  const api = operationRouter();

  const views = async (actor: Actor, items: { pipeline: Pipeline; perms: Permissions }[], timestamps: 'iso' | 'utc' = 'utc') => {
    // Reads bring the counts along; after a write they are read afresh.
    const counts = await service.counts(items.flatMap((i) => (i.pipeline.counts ? [] : [i.pipeline.id])));
    return items.map(({ pipeline: p, perms }) =>
      serializePipeline(p, {
        orgSlug: actor.organization.slug,
        publicUrl,
        webhookUrl: service.showsWebhookUrl(actor, perms) ? service.webhookUrl(p.id) : undefined,
        badgeUrl: service.badgeUrl(p.id),
        counts: p.counts ?? counts.get(p.id)!,
        timestamps,
      }),
    );
  };
  const view = async (actor: Actor, pipeline: Pipeline, perms: Permissions, timestamps: 'iso' | 'utc' = 'utc') =>
    (await views(actor, [{ pipeline, perms }], timestamps))[0];

  api.on('listPipelines', async (req, res) => {
    const actor = actorOf(res);
    const q = req.query;
    const items = await countedPage(req, res, publicUrl, (offset, limit) => service.list(actor, { name: q.name, repository: q.repository }, offset, limit));
    res.json(await views(actor, items));
  });

  api.on('createPipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms, notices } = await service.create(actor, req.body);
    setWarnings(res, notices);
    res.status(201).json(await view(actor, pipeline, perms, 'iso'));
  });

  api.on('getPipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.get(actor, req.params.pipeline_slug, { counts: true });
    res.json(await view(actor, pipeline, perms));
  });

  api.on('updatePipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms, notices } = await service.update(actor, req.params.pipeline_slug, req.body);
    setWarnings(res, notices);
    res.json(await view(actor, pipeline, perms));
  });

  api.on('deletePipeline', async (req, res) => {
    await service.delete(actorOf(res), req.params.pipeline_slug);
    res.status(204).end();
  });

  api.on('archivePipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.archive(actor, req.params.pipeline_slug);
    res.json(await view(actor, pipeline, perms));
  });

  api.on('unarchivePipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.unarchive(actor, req.params.pipeline_slug);
    res.json(await view(actor, pipeline, perms));
  });

  api.on('addPipelineWebhook', async (req, res) => {
    const webhookUrl = await service.addWebhook(actorOf(res), req.params.pipeline_slug);
    res.status(201).json({ webhook_url: webhookUrl });
  });

  // GitHub webhook processing: read, enable (PUT), disable (DELETE).
  const githubWebhooks = async (actor: Actor, slug: string, enabled?: boolean) => {
    const { pipeline, disabled } = await service.githubWebhookProcessing(actor, slug, enabled);
    return serializeGithubWebhookProcessing(pipeline, disabled, { publicUrl, orgSlug: actor.organization.slug });
  };
  api.on('getGithubWebhookProcessing', async (req, res) => {
    res.json(await githubWebhooks(actorOf(res), req.params.pipeline_slug));
  });
  api.on('enableGithubWebhookProcessing', async (req, res) => {
    res.json(await githubWebhooks(actorOf(res), req.params.pipeline_slug, true));
  });
  api.on('disableGithubWebhookProcessing', async (req, res) => {
    res.json(await githubWebhooks(actorOf(res), req.params.pipeline_slug, false));
  });

  // A Windsock extension: the secret provider deliveries are checked with, and its rotation.
  api.on('getPipelineWebhookSecret', async (req, res) => {
    res.json({ secret: await service.readWebhookSecret(actorOf(res), req.params.pipeline_slug) });
  });

  api.on('rotatePipelineWebhookSecret', async (req, res) => {
    res.json({ secret: await service.rotateWebhookSecret(actorOf(res), req.params.pipeline_slug) });
  });

  return api.router;
}
