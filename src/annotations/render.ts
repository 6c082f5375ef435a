/**
 * An annotation's body to the HTML the API answers: Markdown rendered by markdown-it (raw HTML
 * allowed, as the real service allows it in annotations), then cleaned by sanitize-html with an
 * explicit allow-list of tags, attributes and URL schemes. What the allow-list leaves out never
 * survives: scripts and styles (with their content), event handler attributes, `style`
 * attributes (a table column's alignment is written as `align`), frames, forms, meta
 * refreshes, SVG and MathML, and any URL whose scheme is not http(s), mailto or `artifact:`
 * (the docs' links to a build's artifacts), so `javascript:`, `vbscript:` and `data:` URLs are
 * dropped however they are cased, encoded or split by whitespace.
 *
 * Rendering takes time in proportion to the body (about a second for 1 MiB on a loaded 2-core
 * machine), so it runs in one long-lived worker thread, never on the thread that answers
 * requests: a large annotation queues behind others there and stalls nothing else.
 */
import { Worker } from 'node:worker_threads';
import type sanitizeHtml from 'sanitize-html';
import { ValidationError } from '../core/errors';

/** `artifact://path` is how an annotation links to and shows the build's artifacts. */
const SCHEMES = ['http', 'https', 'mailto', 'artifact'];

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'p',
    'br',
    'hr',
    'blockquote',
    'pre',
    'code',
    'kbd',
    'samp',
    'var',
    'em',
    'strong',
    'b',
    'i',
    'u',
    's',
    'del',
    'ins',
    'mark',
    'small',
    'sub',
    'sup',
    'abbr',
    'cite',
    'q',
    'time',
    'a',
    'img',
    'ul',
    'ol',
    'li',
    'dl',
    'dt',
    'dd',
    'table',
    'caption',
    'colgroup',
    'col',
    'thead',
    'tbody',
    'tfoot',
    'tr',
    'th',
    'td',
    'details',
    'summary',
    'div',
    'span',
    'figure',
    'figcaption',
  ],
  allowedAttributes: {
    '*': ['class', 'title'],
    a: ['href', 'name'],
    img: ['src', 'alt', 'width', 'height'],
    ol: ['start'],
    th: ['colspan', 'rowspan', 'align'],
    td: ['colspan', 'rowspan', 'align'],
    col: ['span'],
    colgroup: ['span'],
    details: ['open'],
    time: ['datetime'],
    abbr: ['title'],
    q: ['cite'],
  },
  allowedSchemes: SCHEMES,
  allowedSchemesByTag: {},
  allowedSchemesAppliedToAttributes: ['href', 'src', 'cite'],
  allowProtocolRelative: false,
  // Their content is dropped with them, not kept as text.
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'title', 'iframe', 'noembed', 'noframes', 'xmp', 'template'],
  disallowedTagsMode: 'discard',
};

/**
 * The worker's source, plain JavaScript evaluated as the worker (a worker cannot load a .ts file
 * under ts-jest): CommonMark with the GitHub Flavored Markdown extensions the docs name (tables
 * and strikethrough, markdown-it's own; bare URLs as links), a table column's alignment written
 * as `align` (as GitHub writes it) rather than markdown-it's `style` (no style attribute is
 * allowed at all, so none is parsed: CSS parsing was half the sanitiser's time), then
 * sanitize-html with SANITIZE. The libraries come by absolute path, so the worker finds them
 * wherever the process was started.
 */
const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const MarkdownIt = require(workerData.markdownIt);
const sanitizeHtml = require(workerData.sanitizeHtml);
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });
markdown.core.ruler.push('align_attribute', (state) => {
  for (const token of state.tokens) {
    const style = token.attrGet('style');
    if (typeof style !== 'string') continue;
    const align = /^text-align:(left|right|center)$/.exec(style);
    if (!align) continue;
    token.attrs = (token.attrs || []).filter(([name]) => name !== 'style');
    token.attrSet('align', align[1]);
  }
});
parentPort.on('message', ({ id, body }) => {
  try {
    parentPort.postMessage({ id, html: sanitizeHtml(markdown.render(body), workerData.sanitize) });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

/**
 * The render worker, started at the first render and kept: it holds the process open only while
 * a render is pending, and one that failed is replaced at the next render.
 */
class RenderWorker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (html: string) => void; reject: (err: Error) => void }>();
  private nextId = 1;

  render(body: string): Promise<string> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, body });
    });
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { markdownIt: require.resolve('markdown-it'), sanitizeHtml: require.resolve('sanitize-html'), sanitize: SANITIZE },
    });
    worker.unref();
    worker.on('message', (m: { id: number; html?: string; error?: string }) => {
      const waiting = this.pending.get(m.id);
      if (!waiting) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      if (m.error !== undefined) waiting.reject(new Error(`rendering the annotation failed: ${m.error}`));
      else waiting.resolve(m.html!);
    });
    const fail = (err: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('the annotation render worker stopped')));
    this.worker = worker;
    return worker;
  }
}

const renderer = new RenderWorker();

/** The sanitised HTML of a Markdown (or HTML) body. */
export function renderAnnotationBody(body: string): Promise<string> {
  return renderer.render(body);
}

/**
 * The contract's bound on `body_html` (16 Mi characters): markup and escapes make HTML longer than
 * its Markdown (a table cell, `&` as `&amp;`), so a 1 MiB body may render to several times that.
 */
export const MAX_ANNOTATION_HTML_LENGTH = 16 * 1024 * 1024;

/** The body's HTML; a 422 on `body` when it is longer than `max`. */
export async function renderAnnotationHtml(body: string, max = MAX_ANNOTATION_HTML_LENGTH): Promise<string> {
  const html = await renderAnnotationBody(body);
  if (html.length > max) throw ValidationError.field('body', `renders to more than ${formatLength(max)} of HTML`);
  return html;
}

function formatLength(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} characters`;
}

const ARTIFACT_TAG = /<(?:a|img)\s[^>]*>/g;
const ARTIFACT_ATTRIBUTE = /(\s(?:href|src)=")artifact:\/\/([^"]*)"/gi;
const ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&lt;': '<', '&gt;': '>' };
const escapeAttribute = (s: string) => s.replace(/[&"<>]/g, (c) => ({ '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;' })[c]!);

/**
 * `artifact://path` links and images of a rendered body (`href` of `a`, `src` of `img`, the
 * docs' two uses) with the URL `resolve` gives for the artifact's path, for a page to show: a
 * browser can follow neither `artifact:` nor a path without its build. Exact on the renderer's
 * own output, which sanitize-html writes with every `<` of text and every `"`, `<` and `>` of
 * an attribute value escaped: a `<` always opens a tag, and a value never holds a `"`.
 */
export function rewriteArtifactLinks(bodyHtml: string, resolve: (path: string) => string): string {
  if (!/artifact:\/\//i.test(bodyHtml)) return bodyHtml;
  return bodyHtml.replace(ARTIFACT_TAG, (tag) =>
    tag.replace(ARTIFACT_ATTRIBUTE, (_all, start: string, value: string) => {
      const raw = value.replace(/&(?:amp|quot|lt|gt);/g, (e) => ENTITIES[e]!);
      let path = raw;
      try {
        // Markdown link destinations come percent-encoded (`my%20file.png`); raw HTML ones as written.
        path = decodeURIComponent(raw);
      } catch {
        // Not percent-encoding after all (`100%.txt`): the path as written.
      }
      return `${start}${escapeAttribute(resolve(path))}"`;
    }),
  );
}
