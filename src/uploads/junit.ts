/**
 * JUnit XML -> upload results. The bytes are decoded as the document says (a byte order mark,
 * else the XML declaration's `encoding`, else UTF-8) through iconv-lite. fast-xml-parser with
 * entity processing off; a document with a DOCTYPE or an entity declaration is refused before
 * parsing (no billion laughs, no external entities), and only the five predefined entities and
 * character references are decoded. A malformed document is a 422 naming the line and column
 * the parser stopped at.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import iconv from 'iconv-lite';
import { ValidationError } from '../core/errors';
import { errorMessage, isRecord } from '../core/guards';
import { MAX_RESULTS } from './results';

type Node = Record<string, unknown>;

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const MAX_DEPTH = 32;

function decode(s: string): string {
  return s.replace(/&(?:#x([0-9a-fA-F]{1,6})|#([0-9]{1,7})|(lt|gt|amp|quot|apos));/g, (whole, hex: string, dec: string, name: string) => {
    if (name) return PREDEFINED[name]!;
    const cp = hex ? parseInt(hex, 16) : Number(dec);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
  });
}

const refused = (code: string) => ValidationError.field('data', code);

/** `encoding="..."` of an XML declaration at the very start (EncName of XML 1.0, section 4.3.3). */
const DECLARED_ENCODING = /^<\?xml\s[^>]*?\bencoding\s*=\s*(["'])([A-Za-z][A-Za-z0-9._-]{0,63})\1/;

/**
 * The document as text. A byte order mark decides (UTF-8, UTF-16 LE or BE), then the pattern of
 * a BOM-less UTF-16 `<?` (XML 1.0 appendix F), then the declaration's `encoding`, read from the
 * ASCII-compatible head; with none, UTF-8. An encoding iconv-lite does not know is refused.
 */
export function decodeXml(xml: Buffer): string {
  const [b0, b1, b2] = [xml[0], xml[1], xml[2]];
  if (b0 === 0xef && b1 === 0xbb && b2 === 0xbf) return iconv.decode(xml, 'utf-8');
  if (b0 === 0xff && b1 === 0xfe) return iconv.decode(xml, 'utf-16le');
  if (b0 === 0xfe && b1 === 0xff) return iconv.decode(xml, 'utf-16be');
  if (b0 === 0x3c && b1 === 0x00 && b2 === 0x3f) return iconv.decode(xml, 'utf-16le');
  if (b0 === 0x00 && b1 === 0x3c && b2 === 0x00) return iconv.decode(xml, 'utf-16be');
  const declared = DECLARED_ENCODING.exec(xml.subarray(0, 512).toString('latin1'))?.[2];
  if (declared === undefined) return iconv.decode(xml, 'utf-8');
  if (!iconv.encodingExists(declared))
    throw refused(`declares the encoding ${declared}, which is not supported: use UTF-8, UTF-16 or an ISO-8859 or Windows code page`);
  // UTF-16 or UTF-32 without a byte order mark or the pattern above cannot be told from its bytes.
  if (/^(utf-?16|utf-?32|ucs-?2)/i.test(declared)) throw refused(`declares the encoding ${declared} but has no byte order mark: add one, or send UTF-8`);
  return iconv.decode(xml, declared);
}

// cast: fast-xml-parser's output is untyped; an element is an object of attributes and children, or
// its text alone when it has neither, which attr() and text() both read safely (attr() finds nothing on a string).
const list = (v: unknown): Node[] => (Array.isArray(v) ? (v as Node[]) : v === undefined ? [] : [v as Node]);
const attr = (n: Node, name: string): string | undefined => {
  const v = n[name];
  return typeof v === 'string' ? decode(v) : undefined;
};
const text = (n: Node | string): string => {
  if (typeof n === 'string') return decode(n);
  const v = n['#text'];
  return typeof v === 'string' ? decode(v) : '';
};

function toResult(tc: Node): Record<string, unknown> {
  const failure = list(tc.failure)[0] ?? list(tc.error)[0];
  const skipped = tc.skipped !== undefined;
  const file = attr(tc, 'file');
  const line = attr(tc, 'line');
  const time = Number(attr(tc, 'time'));
  const result: Record<string, unknown> = {
    scope: attr(tc, 'classname'),
    name: attr(tc, 'name'),
    file_name: file ?? null,
    location: file ? (line ? `${file}:${line}` : file) : null,
    result: failure !== undefined ? 'failed' : skipped ? 'skipped' : 'passed',
    history: { duration: Number.isFinite(time) && time >= 0 ? time : null },
  };
  if (failure !== undefined) {
    const body = text(failure);
    const lines = body.split(/\r?\n/).filter((l) => l.trim() !== '');
    const message = typeof failure === 'string' ? undefined : attr(failure, 'message');
    result.failure_reason = message ?? lines[0] ?? null;
    result.failure_expanded = lines.length ? [{ expanded: lines, backtrace: [] }] : [];
  }
  return result;
}

/**
 * The testcases of a JUnit document as upload results, in document order per suite
 * (`classname` becomes `scope`; checkResults rejects a testcase without it).
 */
export function parseJUnit(xml: Buffer): Record<string, unknown>[] {
  const doc = decodeXml(xml).replace(/^\uFEFF/, '');
  if (/<!(DOCTYPE|ENTITY)/i.test(doc)) throw refused('contains a DOCTYPE or entity declaration, which is refused');
  const valid = XMLValidator.validate(doc);
  if (valid !== true) {
    // The validator gives no column for some errors (an empty document).
    const where = valid.err.col === undefined ? `line ${valid.err.line}` : `line ${valid.err.line}, column ${valid.err.col}`;
    throw refused(`is not well-formed XML: ${where}: ${valid.err.msg}`);
  }
  let parsed: unknown;
  try {
    parsed = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      processEntities: false,
      htmlEntities: false,
      parseTagValue: false,
      parseAttributeValue: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
      isArray: (name) => ['testsuites', 'testsuite', 'testcase', 'failure', 'error', 'skipped'].includes(name),
    }).parse(doc);
  } catch (err) {
    throw refused(`could not be parsed as XML: ${errorMessage(err)}`);
  }
  if (!isRecord(parsed)) throw refused('could not be parsed as XML: the parser gave no document');
  const root: Node = parsed;

  const results: Record<string, unknown>[] = [];
  const walk = (suite: Node, depth: number) => {
    if (depth > MAX_DEPTH) throw refused(`nests test suites deeper than ${MAX_DEPTH} levels`);
    for (const tc of list(suite.testcase)) {
      if (results.length >= MAX_RESULTS) throw refused(`has more than ${MAX_RESULTS} test cases: split it into several uploads`);
      results.push(typeof tc === 'object' && tc !== null ? toResult(tc) : {});
    }
    for (const child of list(suite.testsuite)) walk(child, depth + 1);
  };
  if (root.testsuites === undefined && root.testsuite === undefined) throw refused('is not a JUnit document: expected <testsuites> or <testsuite> at the top');
  for (const s of [...list(root.testsuites).flatMap((s) => list(s.testsuite)), ...list(root.testsuite)]) walk(s, 1);
  return results;
}
