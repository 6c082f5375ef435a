/**
 * How artifact bytes are served, so that nothing a job uploads can run in Windsock's origin (the
 * web pages' session and CSRF token live there). Every content response carries
 * `X-Content-Type-Options: nosniff` (the browser never guesses a type the header does not say)
 * and `Content-Security-Policy: sandbox; default-src 'none'` (a document opened anyway gets an
 * opaque origin, no script, no plugin, no subresource). Only types that cannot be active are
 * shown inline: raster images and plain text; everything else (HTML, SVG, XML, PDF, JavaScript,
 * anything unknown or unparsable) is `Content-Disposition: attachment`, a download. Types a page
 * would run or apply when it loads them as a subresource (`<script src>`, a worker, a
 * stylesheet, WebAssembly) are served as `application/octet-stream`, which nosniff makes
 * unloadable as any of those; the artifact's own type stays its `mime_type` in the API.
 * docs/artifacts.md explains the rules and ARTIFACTS_ORIGIN.
 */

/** The Content-Security-Policy of every artifact content response. */
export const ARTIFACT_CSP = "sandbox; default-src 'none'";

/** The served type of content whose own type is unusable or must not be served as itself. */
const OPAQUE_TYPE = 'application/octet-stream';

/** Raster images: a browser only ever decodes them (SVG is a document with scripts, so not here). */
const INLINE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp', 'image/x-icon', 'image/vnd.microsoft.icon']);

/** Types a page executes or applies when it loads them as a subresource (the HTML standard's JavaScript MIME types, CSS, WebAssembly). */
const SUBRESOURCE_ACTIVE = new Set([
  'application/ecmascript',
  'application/javascript',
  'application/x-ecmascript',
  'application/x-javascript',
  'text/ecmascript',
  'text/javascript',
  'text/javascript1.0',
  'text/javascript1.1',
  'text/javascript1.2',
  'text/javascript1.3',
  'text/javascript1.4',
  'text/javascript1.5',
  'text/jscript',
  'text/livescript',
  'text/x-ecmascript',
  'text/x-javascript',
  'text/css',
  'application/wasm',
]);

// RFC 9110 tokens for the type and subtype; a charset value of the same characters.
const MEDIA_TYPE = /^\s*([a-z0-9!#$&^_.+-]{1,127})\/([a-z0-9!#$&^_.+-]{1,127})\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([a-z0-9!#$&^_.+-]{1,40})"?\s*(?:;|$)/i;

export interface ServedAs {
  /** The Content-Type header. */
  contentType: string;
  /** `inline` for raster images and plain text, `attachment` for everything else. */
  disposition: 'inline' | 'attachment';
}

/** How content registered with `declared` (the agent's type, any string up to 255 characters) is served. */
export function servedAs(declared: string): ServedAs {
  const m = MEDIA_TYPE.exec(declared);
  if (!m) return { contentType: OPAQUE_TYPE, disposition: 'attachment' };
  const essence = `${m[1]}/${m[2]}`.toLowerCase();
  if (INLINE_IMAGES.has(essence)) return { contentType: essence, disposition: 'inline' };
  if (essence === 'text/plain') {
    const charset = CHARSET.exec(declared)?.[1];
    return { contentType: charset ? `text/plain; charset=${charset.toLowerCase()}` : 'text/plain', disposition: 'inline' };
  }
  if (SUBRESOURCE_ACTIVE.has(essence)) return { contentType: OPAQUE_TYPE, disposition: 'attachment' };
  return { contentType: essence, disposition: 'attachment' };
}

/**
 * The Content-Disposition header for a file name from a job (any characters): an ASCII fallback
 * in `filename` (quotes, backslashes and control characters replaced) and the exact name in
 * `filename*` (RFC 6266, RFC 8187), so no name can end the header or add a parameter.
 */
export function contentDisposition(disposition: ServedAs['disposition'], filename: string): string {
  // A lone surrogate (JSON can carry one) would make encodeURIComponent throw.
  const name = (filename || 'artifact').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
