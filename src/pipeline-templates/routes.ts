/** Pipeline templates of an organization: thin handlers for list, get, create, update and delete. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { countedPage } from '../http/responses/pagination';
import { serializePipelineTemplate } from './serialize';
import type { PipelineTemplateService } from './service';

export function pipelineTemplateRoutes(templates: PipelineTemplateService, publicUrl: string) {
  const api = operationRouter();

  api.on('listPipelineTemplates', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => templates.list(actor, offset, limit));
    res.json(items.map((t) => serializePipelineTemplate(t, actor.organization, publicUrl)));
  });

  api.on('getPipelineTemplate', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializePipelineTemplate(await templates.get(actor, req.params.template_uuid), actor.organization, publicUrl));
  });

  api.on('createPipelineTemplate', async (req, res) => {
    const actor = actorOf(res);
    const { name, description, configuration, available } = req.body;
    res
      .status(201)
      .json(serializePipelineTemplate(await templates.create(actor, { name, description, configuration, available }), actor.organization, publicUrl));
  });

  api.on('updatePipelineTemplate', async (req, res) => {
    const actor = actorOf(res);
    const { name, description, configuration, available } = req.body;
    const t = await templates.update(actor, req.params.template_uuid, { name, description, configuration, available });
    res.json(serializePipelineTemplate(t, actor.organization, publicUrl));
  });

  api.on('deletePipelineTemplate', async (req, res) => {
    await templates.delete(actorOf(res), req.params.template_uuid);
    res.status(204).end();
  });

  return api.router;
}
