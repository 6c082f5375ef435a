/**
 * The interactive API reference at `GET /docs`: Redoc's standalone bundle, served by Windsock
 * from node_modules (no CDN: the bundle loads no fonts or scripts of its own; the page reads the
 * spec from `/openapi.json`). The page has no inline script: the bundle starts itself on the
 * `<redoc spec-url>` element above it. A strict Content-Security-Policy allows only this origin's
 * scripts, its own styles (Redoc injects them with styled-components: style-src 'unsafe-inline',
 * which runs no code) and the search worker Redoc starts from a blob. The bundle's URL carries a
 * hash of its content, so it is cached for a year and a new Redoc gets a new URL.
 * One thing Redoc cannot be told not to load: the side menu's Redocly logo, an <img> of their CDN
 * with no option to drop it. `img-src` refuses it, so it is never fetched (the image removes
 * itself on error; the browser notes the refusal in its console).
 * Outside the contract, like /openapi.json: answered before the validator (src/app.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import express, { type Router } from 'express';

const BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function page(bundlePath: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Windsock REST API reference</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="${escapeAttr(bundlePath)}"></script>
</body>
</html>
`;
}

export function docsRoutes(): Router {
  // Read once, on the first request for either: ~1 MB that a server not serving docs never loads.
  let loaded: { body: Buffer; path: string; html: string } | undefined;
  const load = () => {
    if (!loaded) {
      const body = fs.readFileSync(BUNDLE);
      const hash = crypto.createHash('sha256').update(body).digest('hex').slice(0, 16);
      const path = `/docs/redoc.standalone.${hash}.js`;
      loaded = { body, path, html: page(path) };
    }
    return loaded;
  };
  const router = express.Router();
  router.get('/docs', (_req, res) => {
    const { html } = load();
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    // The page names the bundle by hash: it must be re-read when Windsock is upgraded.
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(html);
  });
  router.get('/docs/:asset', (req, res, next) => {
    const { body, path } = load();
    if (req.path !== path) return next();
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('application/javascript').send(body);
  });
  return router;
}
