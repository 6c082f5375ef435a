/** Webhook deliveries: `POST /deliver/{token}`, outside /v2 (the token in the path is the credential). */
import type { Request } from 'express';
import { operationRouter, type OperationRequest } from '../http/operation';
import type { DeliveryService } from './service';

/** The body exactly as it arrived, kept by the delivery body parser (app.ts) for signature checks. */
export interface RawBodyRequest extends Request {
  rawBody?: Buffer;
}

export function deliveryRoutes(deliveries: DeliveryService) {
  const api = operationRouter();
  api.on('deliverWebhook', async (req: OperationRequest<'deliverWebhook'> & Pick<RawBodyRequest, 'rawBody'>, res) => {
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
