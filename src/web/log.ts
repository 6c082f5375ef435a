/**
 * The log renderers the build pages use.
 *
 * `renderLog` (the whole log as folded HTML) lives with the jobs (builds/jobs/log-html.ts)
 * because the REST API serves the same HTML (`.../log.html`, `Accept: text/html`).
 *
 * `renderLogLines` is the log viewer's (assets/log.js): the log as numbered lines, each escaped
 * HTML, so the viewer can window a 25 MB log (only the visible lines in the DOM), search it, link
 * to a line and append a running job's new bytes without re-rendering what it shows. It keeps
 * what the terminal showed: the 16 colours as classes (themeable), 256 colours and true colour as
 * `data-fg`/`data-bg` hex values that the viewer applies through the CSSOM (the pages' CSP allows
 * no style attributes), bold, faint, italic, underline; Buildkite's `_bk;t=<ms>` timestamps are
 * kept per line. The style at the end of what was rendered is a short token (`encodeLogState`)
 * the viewer sends back with the next offset, so colours carry across the boundary of two reads.
 */
import { escapeHtml } from '../core/escape-html';
import { type Colour, type LogColours, type LogStyle, renderTerminalLine, sectionLine, type SectionMarker, splitLogLines } from '../builds/jobs/log-lines';

export { renderLog } from '../builds/jobs/log-html';
export { type LogStyle, PLAIN_STYLE } from '../builds/jobs/log-lines';

/** One line of the log as the viewer shows it. */
export interface LogLine {
  /** Escaped HTML: text and spans only. */
  h: string;
  /** The `_bk;t=` time the agent stamped the line with (Unix ms), when it did. */
  t?: number;
  /** A section header (`---`, `+++`, `~~~`): `h` is then its plain text. */
  g?: SectionMarker;
  /** `^^^ +++`: expands the section before it; shown as nothing. */
  x?: 1;
}

// Every colour and faint: the viewer applies the hex ones through the CSSOM.
const COLOURS: LogColours = { hex: true, faint: true };
// eslint-disable-next-line no-control-regex -- the agent's APC timestamp
const TIMESTAMP = /\x1b_bk;t=(\d{1,15})(?:\x07|\x1b\\)/;

/** One raw line of the log (no newline) as the viewer's line. */
export function renderLogLine(raw: string, state: { style: LogStyle }): LogLine {
  // The line's timestamp comes before anything a carriage return redraws, so it is read from the raw line.
  const stamp = TIMESTAMP.exec(raw);
  const { html, text } = renderTerminalLine(raw, state, COLOURS);
  const line: LogLine = { h: html };
  if (stamp) line.t = Number(stamp[1]);
  const section = sectionLine(text);
  if (section === 'expand') {
    line.h = '';
    line.x = 1;
  } else if (section) {
    // The header's text, without its colours: a section's title reads as one label.
    line.h = escapeHtml(section.title);
    line.g = section.marker;
  }
  return line;
}

/**
 * `text` (whole lines: each ends in a newline, unless `final`) as the viewer's lines, from
 * `style`; returns the style at its end for the next part of the log.
 */
export function renderLogLines(text: string, style: LogStyle): { lines: LogLine[]; style: LogStyle } {
  const state = { style };
  return { lines: splitLogLines(text).map((l) => renderLogLine(l, state)), style: state.style };
}

const COLOUR_TOKEN = '(|\\d{1,2}|[0-9a-f]{6})';
const STATE_TOKEN = new RegExp(`^${COLOUR_TOKEN}~${COLOUR_TOKEN}~(b?d?i?u?)$`);

/** The style as a short token (`fg~bg~flags`) the viewer sends back with the next offset. */
export function encodeLogState(s: LogStyle): string {
  const c = (v: Colour) => (v === null ? '' : String(v));
  return `${c(s.fg)}~${c(s.bg)}~${s.bold ? 'b' : ''}${s.faint ? 'd' : ''}${s.italic ? 'i' : ''}${s.underline ? 'u' : ''}`;
}

/** A token of encodeLogState back to its style; null when it is not one. */
export function decodeLogState(token: string): LogStyle | null {
  const m = STATE_TOKEN.exec(token);
  if (!m) return null;
  const c = (v: string): Colour | undefined => (v === '' ? null : /^\d+$/.test(v) ? (Number(v) < 16 ? Number(v) : undefined) : v);
  const fg = c(m[1]!);
  const bg = c(m[2]!);
  if (fg === undefined || bg === undefined) return null;
  const f = m[3]!;
  return { fg, bg, bold: f.includes('b'), faint: f.includes('d'), italic: f.includes('i'), underline: f.includes('u') };
}
