/**
 * An annotation's body to the HTML the API answers: Markdown rendered by markdown-it (raw HTML
 * allowed, as the real service allows it in annotations), then cleaned by sanitize-html with an
 * explicit allow-list of tags, attributes, classes and URL schemes. What the allow-list leaves
 * out never survives: scripts and styles (with their content), event handler attributes, `style`
 * attributes (a table column's alignment is written as `align`), frames, forms, meta
 * refreshes, SVG and MathML, any class the docs do not list, and any URL whose scheme is not
 * http(s), mailto, itms-services or `artifact:` (the docs' links to a build's artifacts), so
 * `javascript:`, `vbscript:` and `data:` URLs are dropped however they are cased, encoded or
 * split by whitespace. A ```term or ```terminal block is console output: its ANSI colours become
 * the classes of Buildkite's terminal-to-html.
 *
 * Rendering takes time in proportion to the body (about a second for 1 MiB on a loaded 2-core
 * machine), so it runs in one long-lived worker thread, never on the thread that answers
 * requests: a large annotation queues behind others there and stalls nothing else.
 */
import { Worker } from 'node:worker_threads';
import type sanitizeHtml from 'sanitize-html';
import { ValidationError } from '../core/errors';

/**
 * The docs' schemes for a link ("`http`, `https`, `mailto`, `itms-services`, and relative"), and
 * `artifact://path`, how an annotation links to and shows the build's artifacts.
 */
const SCHEMES = ['http', 'https', 'mailto', 'itms-services', 'artifact'];

/**
 * The docs' exhaustive list of the classes annotations support ("Supported CSS classes", Basscss),
 * as the docs print it.
 */
const BASSCSS_CLASSES = `
bold regular italic caps underline
left-align center right-align justify
align-baseline align-top align-middle align-bottom
list-reset truncate fit

inline block inline-block table table-cell
overflow-hidden overflow-scroll overflow-auto

ml-auto mr-auto mx-auto
flex flex-column flex-wrap flex-auto flex-none
items-start items-end items-center items-baseline items-stretch
self-start self-end self-center self-baseline self-stretch
justify-start justify-end justify-center justify-between justify-around
content-start content-end content-center content-between content-around content-stretch
order-0 order-1 order-2 order-3 order-last

border border-top border-right border-bottom border-left border-none rounded
border-black border-gray border-silver border-white border-aqua border-blue border-navy border-teal
border-green border-olive border-lime border-yellow border-orange border-red border-fuchsia border-purple border-maroon

h1 h2 h3 h4 h5 h6

m0 mt0 mr0 mb0 ml0 mx0 my0 m1
mt1 mr1 mb1 ml1 mx1 my1
m2 mt2 mr2 mb2 ml2 mx2 my2
m3 mt3 mr3 mb3 ml3 mx3 my3
m4 mt4 mr4 mb4 ml4 mx4 my4
mxn1 mxn2 mxn3 mxn4

p0 pt0 pr0 pb0 pl0 px0 py0
p1 pt1 pr1 pb1 pl1 py1 px1
p2 pt2 pr2 pb2 pl2 py2 px2
p3 pt3 pr3 pb3 pl3 py3 px3
p4 pt4 pr4 pb4 pl4 py4 px4

col-1 col-2 col-3 col-4 col-5 col-6
col-7 col-8 col-9 col-10 col-11 col-12

sm-col-1 sm-col-2 sm-col-3 sm-col-4 sm-col-5 sm-col-6
sm-col-7 sm-col-8 sm-col-9 sm-col-10 sm-col-11 sm-col-12

md-col-1 md-col-2 md-col-3 md-col-4 md-col-5 md-col-6
md-col-7 md-col-8 md-col-9 md-col-10 md-col-11 md-col-12

lg-col-1 lg-col-2 lg-col-3 lg-col-4 lg-col-5 lg-col-6
lg-col-7 lg-col-8 lg-col-9 lg-col-10 lg-col-11 lg-col-12

black gray silver white aqua blue navy teal green olive lime
yellow orange red fuchsia purple maroon muted

btn btn-sm btn-lg btn-primary

bg-black bg-gray bg-silver bg-white bg-aqua bg-blue
bg-navy bg-teal bg-green bg-olive bg-lime bg-yellow
bg-orange bg-red bg-fuchsia bg-purple bg-maroon bg-muted
`
  .trim()
  .split(/\s+/);

/**
 * The docs' colored console output: `<pre class="term"><code>` around terminal-to-html's output
 * (the docs tell a step to wrap its own output so), and every class terminal-to-html gives a span:
 * `term-fg1` bold, 2 faint, 3 italic, 4 underline, 5 blink, 9 strike; `term-fg30`-`37` and
 * `term-fgi90`-`97` the 16 colours, `term-bg40`-`47` and `term-bgi100`-`107` their backgrounds;
 * `term-fgx<n>`/`term-bgx<n>` the 256.
 */
const TERMINAL_CLASSES = ['term', /^term-(?:fg[1-59]|fg3[0-7]|fgi9[0-7]|bg4[0-7]|bgi10[0-7]|[fb]gx(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))$/];

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
  // The docs name `open`, `class` (of allowedClasses) and `href`; `title` is kept where Markdown writes it (a, img) and on abbr.
  allowedAttributes: {
    '*': ['class'],
    a: ['href', 'name', 'title'],
    img: ['src', 'alt', 'title', 'width', 'height'],
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
  allowedClasses: { '*': [...BASSCSS_CLASSES, ...TERMINAL_CLASSES] },
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
 *
 * A ```term or ```terminal block is rendered as terminal-to-html renders console output: SGR
 * colours and attributes as its span classes (TERMINAL_CLASSES), kept across lines, each line's
 * spans closed at its end; every other escape sequence (cursor moves, erases, OSC titles and
 * links, APC timestamps) and every control character but tab and newline is dropped, backspace
 * too (terminal-to-html steps its cursor back: that, like cursor moves, needs a screen of cells,
 * left out to keep this simple). markdown-it has already made every carriage return a newline.
 * The build pages' log renderer (builds/jobs/log-lines.ts) is not reused: it is TypeScript, which
 * the worker cannot load, and writes its own class names (`a-f1`), none of the docs'.
 */
const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const MarkdownIt = require(workerData.markdownIt);
const sanitizeHtml = require(workerData.sanitizeHtml);
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });
const escapeHtml = markdown.utils.escapeHtml;
// CSI (an SGR when it ends in m), OSC and APC strings (to BEL, ST or the end), charset designations, one-character escapes, a lone ESC.
const ESCAPE = /\x1b(?:\[([0-9;?]*)([A-Za-z])|[\]_](?:[^\x07\x1b]|\x1b(?!\\))*(?:\x07|\x1b\\|$)|[()][\s\S]?|[78=>M]?)/g;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;
const PLAIN = { fg: '', bg: '', bold: false, faint: false, italic: false, underline: false, blink: false, strike: false };
const TERM_BLOCKS = 10;

/** An SGR's parameters applied to a style, as terminal-to-html's style.color does. */
function sgr(style, params) {
  const codes = params.split(';').filter((p) => p !== '');
  if (codes.length === 0 || (codes.length === 1 && codes[0] === '0')) return PLAIN;
  const s = Object.assign({}, style);
  let extended = ''; // 'fg' or 'bg' after a 38 or 48
  let mode = 0; // then 5 (256 colours) or 2 (true colour)
  let rgb = 0;
  for (const p of codes) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) continue;
    const c = Number(p);
    if (extended && !mode) {
      if (c === 5 || c === 2) mode = c;
      else extended = '';
    } else if (extended) {
      if (mode === 5) s[extended] = extended + 'x' + c;
      // True colour: terminal-to-html has no class for it, and it ends the colour before it.
      else if (++rgb === 3) s[extended] = '';
      if (mode === 5 || rgb === 3) {
        extended = '';
        mode = rgb = 0;
      }
    } else if (c === 0) Object.assign(s, PLAIN);
    else if (c === 1 || c === 2) {
      s.bold = c === 1;
      s.faint = c === 2;
    } else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 5 || c === 6) s.blink = true;
    else if (c === 9) s.strike = true;
    else if (c === 21 || c === 22) s.bold = s.faint = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c === 25) s.blink = false;
    else if (c === 29) s.strike = false;
    else if (c === 38 || c === 48) extended = c === 38 ? 'fg' : 'bg';
    else if (c === 39) s.fg = '';
    else if (c === 49) s.bg = '';
    else if ((c >= 30 && c <= 37) || (c >= 90 && c <= 97)) s.fg = (c < 90 ? 'fg' : 'fgi') + c;
    else if ((c >= 40 && c <= 47) || (c >= 100 && c <= 107)) s.bg = (c < 100 ? 'bg' : 'bgi') + c;
  }
  return s;
}

/** A style's classes, in terminal-to-html's order. */
function classes(s) {
  const c = [];
  if (s.fg) c.push('term-' + s.fg);
  if (s.bg) c.push('term-' + s.bg);
  if (s.bold) c.push('term-fg1');
  if (s.faint) c.push('term-fg2');
  if (s.italic) c.push('term-fg3');
  if (s.underline) c.push('term-fg4');
  if (s.blink) c.push('term-fg5');
  if (s.strike) c.push('term-fg9');
  return c.join(' ');
}

/** Console output as terminal-to-html's HTML: escaped text in spans with classes, each line's closed at its end. */
function terminal(text) {
  let html = '';
  let style = PLAIN;
  let cls = '';
  let open = '';
  const close = () => {
    if (open) html += '</span>';
    open = '';
  };
  const write = (chunk) => {
    chunk
      .replace(CONTROL, '')
      .split('\n')
      .forEach((line, i) => {
        if (i) {
          close();
          html += '\n';
        }
        if (!line) return;
        if (open !== cls) {
          close();
          if (cls) html += '<span class="' + cls + '">';
          open = cls;
        }
        html += escapeHtml(line);
      });
  };
  let last = 0;
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m; m = ESCAPE.exec(text)) {
    write(text.slice(last, m.index));
    if (m[2] === 'm') {
      style = sgr(style, m[1]);
      cls = classes(style);
    }
    last = ESCAPE.lastIndex;
  }
  write(text.slice(last));
  close();
  return html;
}

// As the docs and terminal-to-html have it: a term or terminal fence, the first 10 of an annotation, as <pre class="term"><code> and spans; later ones as plain code, escapes stripped.
const fence = markdown.renderer.rules.fence;
markdown.renderer.rules.fence = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const lang = markdown.utils.unescapeAll(token.info).trim().split(/\s+/)[0];
  if (lang !== 'term' && lang !== 'terminal') return fence(tokens, idx, options, env, self);
  env.termBlocks = (env.termBlocks || 0) + 1;
  if (env.termBlocks > TERM_BLOCKS) return '<pre><code>' + escapeHtml(token.content.replace(ESCAPE, '')) + '</code></pre>\n';
  return '<pre class="term"><code>' + terminal(token.content) + '</code></pre>\n';
};
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
    parentPort.postMessage({ id, html: sanitizeHtml(markdown.render(body, {}), workerData.sanitize) });
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
