/** Pipeline schedules (REST): thin handlers for list, create, get, update and delete. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter, type OperationHandler } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializePipelineSchedule } from './serialize';
import type { PipelineScheduleService } from './service';

export function pipelineScheduleRoutes(schedules: PipelineScheduleService, publicUrl: string) {
  const api = operationRouter();

  api.on('listPipelineSchedules', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => schedules.list(actor, req.params.pipeline_slug, offset, limit));
    res.json(items.map((s) => serializePipelineSchedule(s, publicUrl, actor.organization.slug)));
  });
  api.on('createPipelineSchedule', async (req, res) => {
    const actor = actorOf(res);
    const created = await schedules.create(actor, req.params.pipeline_slug, req.body);
    res.status(201).json(serializePipelineSchedule(created, publicUrl, actor.organization.slug));
  });
  api.on('getPipelineSchedule', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializePipelineSchedule(await schedules.get(actor, req.params.pipeline_slug, req.params.schedule_id), publicUrl, actor.organization.slug));
  });
  const updatePipelineScheduleHandler: OperationHandler<'updatePipelineSchedule'> = async (req, res) => {
    const actor = actorOf(res);
    const updated = await schedules.update(actor, req.params.pipeline_slug, req.params.schedule_id, req.body);
    res.json(serializePipelineSchedule(updated, publicUrl, actor.organization.slug));
  };
  api.on('updatePipelineSchedule', updatePipelineScheduleHandler);
  // The same operation under the method the official Go client sends.
  api.on('patchPipelineSchedule', (req, res) => updatePipelineScheduleHandler(req, res));
  api.on('deletePipelineSchedule', async (req, res) => {
    await schedules.delete(actorOf(res), req.params.pipeline_slug, req.params.schedule_id);
    res.status(204).end();
  });

  return api.router;
}
