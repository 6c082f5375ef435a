/**
 * An annotation's body to the HTML the API answers: Markdown rendered by markdown-it (raw HTML
 * allowed, as the real service allows it in annotations), then cleaned by sanitize-html with an
 * explicit allow-list of tags, attributes and URL schemes. What the allow-list leaves out never
 * survives: scripts and styles (with their content), event handler attributes, `style`
 * attributes (a table column's alignment is written as `align`), frames, forms, meta
 * refreshes, SVG and MathML, and any URL whose scheme is not http(s), mailto or `artifact:`
 * (the docs' links to a build's artifacts), so `javascript:`, `vbscript:` and `data:` URLs are
 * dropped however they are cased, encoded or split by whitespace.
 */
import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';
import { ValidationError } from '../core/errors';

// CommonMark with the GitHub Flavored Markdown extensions the docs name: tables and strikethrough
// (markdown-it's own), bare URLs as links (linkify).
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });
// A table column's alignment as `align` (as GitHub writes it), not markdown-it's `style`: no style
// attribute is allowed at all, so none is parsed (CSS parsing was half the sanitiser's time).
markdown.core.ruler.push('align_attribute', (state) => {
  for (const token of state.tokens) {
    const style = token.attrGet('style');
    if (typeof style !== 'string') continue;
    const align = /^text-align:(left|right|center)$/.exec(style);
    if (!align) continue;
    token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
    token.attrSet('align', align[1]!);
  }
});

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

/** The sanitised HTML of a Markdown (or HTML) body. */
export function renderAnnotationBody(body: string): string {
  return sanitizeHtml(markdown.render(body), SANITIZE);
}

/**
 * The contract's bound on `body_html` (16 Mi characters): markup and escapes make HTML longer than
 * its Markdown (a table cell, `&` as `&amp;`), so a 1 MiB body may render to several times that.
 */
export const MAX_ANNOTATION_HTML_LENGTH = 16 * 1024 * 1024;

/** The body's HTML; a 422 on `body` when it is longer than `max`. */
export function renderAnnotationHtml(body: string, max = MAX_ANNOTATION_HTML_LENGTH): string {
  const html = renderAnnotationBody(body);
  if (html.length > max) throw ValidationError.field('body', `renders to more than ${formatLength(max)} of HTML`);
  return html;
}

function formatLength(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} characters`;
}
