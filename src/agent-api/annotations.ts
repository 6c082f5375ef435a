/**
 * `buildkite-agent annotate` and `buildkite-agent annotation remove` on the agent API: the
 * agent (authenticated by agentAuth, see ./routes.ts) names a job it runs. The rules are the
 * annotations area's.
 */
import { serializeAnnotation } from '../annotations/serialize';
import type { AnnotationService } from '../annotations/service';
import { operationRouter } from '../http/contract/operation';
import { agentOf } from './locals';

export function agentAnnotationRoutes(annotations: AnnotationService) {
  const api = operationRouter();

  api.on('annotateFromJob', async (req, res) => {
    const { body, context, style, append, priority, scope } = req.body;
    const { annotation } = await annotations.annotateFromJob(agentOf(res), req.params.job_id, { body, context, style, append, priority, scope });
    res.status(201).json(serializeAnnotation(annotation));
  });

  api.on('removeAnnotationFromJob', async (req, res) => {
    await annotations.removeFromJob(agentOf(res), req.params.job_id, req.params.context, req.query.scope ?? 'build');
    res.status(204).end();
  });

  return api.router;
}
