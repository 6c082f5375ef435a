/**
 * The web interface's static files (./assets: CSS and the small log script), served under
 * /_assets/ with their content hash in the name, so they can be cached for a year: a changed
 * file gets a new name. Read once at start (from src/ under ts-jest, from dist/ once built:
 * `npm run build` copies them).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';

export const ASSETS_PATH = '/_assets';
const TYPES: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml' };

export interface Assets {
  /** The URL of an asset by its source name (`app.css`). */
  url(name: string): string;
  router: Router;
}

export function loadAssets(dir = path.join(__dirname, 'assets')): Assets {
  const byHashed = new Map<string, { body: Buffer; type: string }>();
  const urls = new Map<string, string>();
  for (const name of fs.readdirSync(dir)) {
    const ext = path.extname(name);
    if (!TYPES[ext]) continue;
    const body = fs.readFileSync(path.join(dir, name));
    const digest = crypto.createHash('sha256').update(body).digest('hex').slice(0, 12);
    const hashed = `${path.basename(name, ext)}.${digest}${ext}`;
    byHashed.set(hashed, { body, type: TYPES[ext]! });
    urls.set(name, `${ASSETS_PATH}/${hashed}`);
  }
  const router = express.Router();
  router.get(`${ASSETS_PATH}/:file`, (req, res, next) => {
    const asset = byHashed.get(String(req.params.file));
    if (!asset) return next();
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type(asset.type).send(asset.body);
  });
  return {
    url(name) {
      const u = urls.get(name);
      if (!u) throw new Error(`no web asset ${name}`);
      return u;
    },
    router,
  };
}
