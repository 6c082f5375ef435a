/**
 * JUnit XML -> upload results. fast-xml-parser with entity processing off; a document with a
 * DOCTYPE or an entity declaration is refused before parsing (no billion laughs, no external
 * entities), and only the five predefined entities and character references are decoded. A
 * malformed document is a 422 naming the line and column the parser stopped at.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { ValidationError } from '../core/errors';
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

const list = (v: unknown): Node[] => (Array.isArray(v) ? (v as Node[]) : v === undefined ? [] : [v as Node]);
const attr = (n: Node, name: string): string | undefined => (typeof n[name] === 'string' ? decode(n[name] as string) : undefined);
const text = (n: Node | string): string => (typeof n === 'string' ? decode(n) : typeof n['#text'] === 'string' ? decode(n['#text'] as string) : '');

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
  const doc = xml.toString('utf8').replace(/^\uFEFF/, '');
  if (/<!(DOCTYPE|ENTITY)/i.test(doc)) throw refused('contains a DOCTYPE or entity declaration, which is refused');
  const valid = XMLValidator.validate(doc);
  if (valid !== true) {
    // The validator gives no column for some errors (an empty document).
    const where = valid.err.col === undefined ? `line ${valid.err.line}` : `line ${valid.err.line}, column ${valid.err.col}`;
    throw refused(`is not well-formed XML: ${where}: ${valid.err.msg}`);
  }
  let root: Node;
  try {
    root = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      processEntities: false,
      htmlEntities: false,
      parseTagValue: false,
      parseAttributeValue: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
      isArray: (name) => ['testsuites', 'testsuite', 'testcase', 'failure', 'error', 'skipped'].includes(name),
    }).parse(doc) as Node;
  } catch (err) {
    throw refused(`could not be parsed as XML: ${(err as Error).message}`);
  }

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
