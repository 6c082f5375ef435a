/**
 * Webhook deliveries: `POST /deliver/{token}`, outside /v2 (the token in the path is the
 * credential). A `bktr_` token is a pipeline trigger's (src/pipeline-triggers/); any other a
 * pipeline's provider webhook token.
 */
import type { Request } from 'express';
import { operationRouter, type OperationRequest } from '../http/contract/operation';
import { PipelineTriggerService } from '../pipeline-triggers/service';
import type { DeliveryService } from './service';

/** The body exactly as it arrived, kept by the delivery body parser (app.ts) for signature checks. */
export interface RawBodyRequest extends Request {
  rawBody?: Buffer;
}

export function deliveryRoutes(deliveries: DeliveryService, triggers: PipelineTriggerService, publicUrl: string) {
  const api = operationRouter();
  api.on('deliverWebhook', async (req: OperationRequest<'deliverWebhook'> & Pick<RawBodyRequest, 'rawBody'>, res) => {
    if (PipelineTriggerService.isTriggerToken(req.params.token)) {
      const got = await triggers.receive(req.params.token, {
        contentType: req.get('content-type') ?? null,
        headers: req.headers,
        rawBody: req.rawBody,
        body: req.body,
      });
      const built = got.build;
      const builds = built
        ? [
            {
              id: built.id,
              number: built.number,
              url: `${publicUrl}/v2/organizations/${got.orgSlug}/pipelines/${built.pipelineSlug}/builds/${built.number}`,
              web_url: `${publicUrl}/${got.orgSlug}/${built.pipelineSlug}/builds/${built.number}`,
            },
          ]
        : undefined;
      res.status(built ? 201 : 200).json({ id: got.delivery.id, message: got.message, ...(builds ? { builds } : {}) });
      return;
    }
    const result = await deliveries.deliver(
      req.params.token,
      {
        githubEvent: req.get('x-github-event'),
        githubSignature: req.get('x-hub-signature-256'),
        githubSha1Signature: req.get('x-hub-signature'),
        gitlabEvent: req.get('x-gitlab-event'),
        gitlabToken: req.get('x-gitlab-token'),
        bitbucketEvent: req.get('x-event-key'),
        bitbucketSignature: req.get('x-hub-signature'),
      },
      req.rawBody,
      req.body,
    );
    res.status(result.builds ? 201 : 200).json(result);
  });
  return api.router;
}
