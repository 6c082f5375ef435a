/**
 * An annotation's body to the HTML the API answers: Markdown rendered by markdown-it (raw HTML
 * allowed, as the real service allows it in annotations), then cleaned by sanitize-html with an
 * explicit allow-list of tags, attributes and URL schemes. What the allow-list leaves out never
 * survives: scripts and styles (with their content), event handler attributes, `style`
 * attributes (except a table cell's alignment, which markdown-it writes), frames, forms, meta
 * refreshes, SVG and MathML, and any URL whose scheme is not http(s), mailto or `artifact:`
 * (the docs' links to a build's artifacts), so `javascript:`, `vbscript:` and `data:` URLs are
 * dropped however they are cased, encoded or split by whitespace.
 */
import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';

// CommonMark with the GitHub Flavored Markdown extensions the docs name: tables and strikethrough
// (markdown-it's own), bare URLs as links (linkify).
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });

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
    th: ['style', 'colspan', 'rowspan', 'align'],
    td: ['style', 'colspan', 'rowspan', 'align'],
    col: ['span'],
    colgroup: ['span'],
    details: ['open'],
    time: ['datetime'],
    abbr: ['title'],
    q: ['cite'],
  },
  // The only style kept: markdown-it's `style="text-align:..."` on table cells.
  allowedStyles: { '*': { 'text-align': [/^(left|right|center)$/] } },
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
