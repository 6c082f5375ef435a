#!/usr/bin/env node
// A notification webhook receiver: checks X-Buildkite-Token or X-Buildkite-Signature and prints
// each event. Node.js 20, no dependencies.
//
//   WEBHOOK_SECRET=my-token PORT=9000 node docs/examples/webhook-receiver.mjs
//
// Point a `webhook` notification service at http://127.0.0.1:9000/ with the same token (and
// `"token_mode": "signature"` to have deliveries signed instead); loopback receivers need
// OUTBOUND_ALLOW_PRIVATE=true on the Windsock server (see the README, "Notifications").
import crypto from 'node:crypto';
import http from 'node:http';

const secret = process.env.WEBHOOK_SECRET ?? '';
const port = Number(process.env.PORT ?? 9000);
// A signature older than this is refused, so a captured delivery cannot be replayed later.
const MAX_AGE_SECONDS = 300;

function verified(req, body) {
  const token = req.headers['x-buildkite-token'];
  if (token !== undefined) return secret !== '' && token.length === secret.length && crypto.timingSafeEqual(Buffer.from(token), Buffer.from(secret));
  const header = req.headers['x-buildkite-signature'];
  if (header === undefined) return secret === '';
  const parts = Object.fromEntries(header.split(',').map((kv) => kv.split('=')));
  const timestamp = Number(parts.timestamp);
  if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > MAX_AGE_SECONDS) return false;
  const expected = crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return (
    typeof parts.signature === 'string' &&
    parts.signature.length === expected.length &&
    crypto.timingSafeEqual(Buffer.from(parts.signature), Buffer.from(expected))
  );
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verified(req, body)) {
        res.writeHead(401).end('bad token or signature');
        return;
      }
      const event = JSON.parse(body);
      const what = event.build ? `${event.pipeline?.slug} #${event.build.number} ${event.build.state}` : (event.agent?.name ?? '');
      console.log(`${req.headers['x-buildkite-event']}\t${what}${event.job ? `\tjob ${event.job.id} ${event.job.state}` : ''}`);
      res.writeHead(200).end('ok');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/`));
