/**
 * `GET /badges/<key>.svg` and `.json`: a pipeline's status badge at exactly its `badge_url`, with
 * `branch`, `step`, `style` and `theme` as on buildkite.com, and `/badges/sample.svg?status=` to
 * try a theme. No token (the key is the credential). Short caching: `no-cache` with an ETag, so
 * README viewers and image proxies revalidate and get a 304 while the status holds.
 * Outside the contract, like /openapi.json and /docs (the real badges live on their own host):
 * mounted before the app drops conditional request headers (src/app.ts).
 */
import crypto from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { BadRequestError, NotFoundError } from '../core/errors';
import type { BadgeService, BadgeStatus } from './service';
import { parseStyle, parseTheme, renderBadge } from './svg';
import { isOneOf } from '../db/row-types';

const FILE = /^([0-9a-f]{50}|sample)\.(svg|json)$/;
const STATUSES: BadgeStatus[] = ['passing', 'failing', 'unknown'];

/** A query parameter given once, as text of at most 255 characters (a branch's or a step label's limit). */
function text(req: Request, name: string): string | undefined {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > 255) {
    throw new BadRequestError(`${name} must be given once, at most 255 characters`);
  }
  return value;
}

function send(req: Request, res: Response, status: BadgeStatus, format: string): void {
  const body =
    format === 'json' ? JSON.stringify({ status }) : renderBadge(status, { style: parseStyle(text(req, 'style')), theme: parseTheme(text(req, 'theme')) });
  const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('ETag', etag);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // An SVG opened on its own is a document: it may run nothing and load nothing.
  res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  const match = (req.get('if-none-match') ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (match.includes(etag) || match.includes('*')) {
    res.status(304).end();
    return;
  }
  res.type(format === 'json' ? 'application/json' : 'image/svg+xml; charset=utf-8').send(body);
}

export function badgeRoutes(badges: BadgeService): Router {
  const router = express.Router();
  router.get('/badges/:file', async (req, res) => {
    const m = FILE.exec(String(req.params.file));
    if (!m) throw new NotFoundError('badge');
    const [, key, format] = m;
    if (key === 'sample') {
      const status = text(req, 'status') ?? 'unknown';
      if (!isOneOf(STATUSES, status)) {
        throw new BadRequestError(`status must be one of ${STATUSES.join(', ')}`);
      }
      return send(req, res, status, format!);
    }
    const status = await badges.status(key!, { branch: text(req, 'branch'), step: text(req, 'step') });
    if (status === null) throw new NotFoundError('badge');
    send(req, res, status, format!);
  });
  return router;
}
