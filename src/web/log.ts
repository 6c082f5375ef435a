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

export { renderLog } from '../builds/jobs/log-html';

/** A colour: a palette index 0-15 (a class), or 6 hex digits (256-colour cube, greys, true colour). */
type Colour = number | string | null;

export interface LogStyle {
  fg: Colour;
  bg: Colour;
  bold: boolean;
  faint: boolean;
  italic: boolean;
  underline: boolean;
}

export const PLAIN_STYLE: LogStyle = { fg: null, bg: null, bold: false, faint: false, italic: false, underline: false };

/** One line of the log as the viewer shows it. */
export interface LogLine {
  /** Escaped HTML: text and spans only. */
  h: string;
  /** The `_bk;t=` time the agent stamped the line with (Unix ms), when it did. */
  t?: number;
  /** A section header (`---`, `+++`, `~~~`): `h` is then its plain text. */
  g?: '---' | '+++' | '~~~';
  /** `^^^ +++`: expands the section before it; shown as nothing. */
  x?: 1;
}

// CSI sequences (colours, cursor moves), OSC and APC strings (titles, links, `_bk;t=` timestamps), lone escapes.
// eslint-disable-next-line no-control-regex -- matching terminal control characters is the point
const ESCAPE = /\x1b\[([0-9;:?]*)([\x40-\x7e])|\x1b[\]_P^][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[\x40-\x5f]?/g;
// eslint-disable-next-line no-control-regex -- the agent's APC timestamp
const TIMESTAMP = /\x1b_bk;t=(\d{1,15})(?:\x07|\x1b\\)/;
const HEADER = /^(---|\+\+\+|~~~) (.*)$/;

const hex2 = (n: number) => Math.max(0, Math.min(255, n)).toString(16).padStart(2, '0');

/** xterm's 256 colours: 0-15 the palette (classes), 16-231 a 6x6x6 cube, 232-255 greys. */
function colour256(n: number): Colour {
  if (n < 16) return n;
  if (n < 232) {
    const level = (v: number) => (v === 0 ? 0 : 55 + v * 40);
    const i = n - 16;
    return hex2(level(Math.floor(i / 36))) + hex2(level(Math.floor(i / 6) % 6)) + hex2(level(i % 6));
  }
  const g = 8 + (n - 232) * 10;
  return hex2(g) + hex2(g) + hex2(g);
}

function applySgr(style: LogStyle, params: string): LogStyle {
  const s = { ...style };
  const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => Number(p) || 0);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) Object.assign(s, PLAIN_STYLE);
    else if (c === 1) s.bold = true;
    else if (c === 2) s.faint = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 22) s.bold = s.faint = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c >= 30 && c <= 37) s.fg = c - 30;
    else if (c >= 90 && c <= 97) s.fg = c - 90 + 8;
    else if (c === 39) s.fg = null;
    else if (c >= 40 && c <= 47) s.bg = c - 40;
    else if (c >= 100 && c <= 107) s.bg = c - 100 + 8;
    else if (c === 49) s.bg = null;
    else if (c === 38 || c === 48) {
      const mode = codes[i + 1];
      let value: Colour | undefined;
      if (mode === 5 && codes[i + 2] !== undefined) value = colour256(Math.min(255, codes[i + 2]!));
      else if (mode === 2 && codes[i + 4] !== undefined) value = hex2(codes[i + 2]!) + hex2(codes[i + 3]!) + hex2(codes[i + 4]!);
      if (value !== undefined) {
        if (c === 38) s.fg = value;
        else s.bg = value;
      }
      i += mode === 5 ? 2 : mode === 2 ? 4 : 1;
    }
  }
  return s;
}

function openTag(s: LogStyle): string {
  const c: string[] = [];
  let data = '';
  if (typeof s.fg === 'number') c.push(`a-f${s.fg}`);
  else if (s.fg !== null) data += ` data-fg="${s.fg}"`;
  if (typeof s.bg === 'number') c.push(`a-g${s.bg}`);
  else if (s.bg !== null) data += ` data-bg="${s.bg}"`;
  if (s.bold) c.push('a-b');
  if (s.faint) c.push('a-d');
  if (s.italic) c.push('a-i');
  if (s.underline) c.push('a-u');
  if (!c.length && !data) return '';
  return `<span${c.length ? ` class="${c.join(' ')}"` : ''}${data}>`;
}

/** One line (no newline) -> escaped HTML, its plain text and its timestamp; `state.style` carries on. */
function renderLine(line: string, state: { style: LogStyle }): { html: string; text: string; t?: number } {
  let t: number | undefined;
  // A carriage return (a progress bar redrawing) leaves what was written after it; the line's
  // timestamp comes before any of it, so it is read first.
  const stamp = TIMESTAMP.exec(line);
  if (stamp) t = Number(stamp[1]);
  const cr = line.lastIndexOf('\r', line.length - 1);
  if (cr >= 0) line = line.slice(cr + 1);
  let out = '';
  let text = '';
  let last = 0;
  const emit = (chunk: string) => {
    if (!chunk) return;
    text += chunk;
    const open = openTag(state.style);
    out += open ? `${open}${escapeHtml(chunk)}</span>` : escapeHtml(chunk);
  };
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(line); m; m = ESCAPE.exec(line)) {
    emit(line.slice(last, m.index));
    if (m[2] === 'm' && m[1] !== undefined) state.style = applySgr(state.style, m[1]);
    last = m.index + m[0].length;
    if (m[0].length === 0) ESCAPE.lastIndex++;
  }
  emit(line.slice(last));
  return t === undefined ? { html: out, text } : { html: out, text, t };
}

/** One raw line of the log (no newline) as the viewer's line. */
export function renderLogLine(raw: string, state: { style: LogStyle }): LogLine {
  const { html, text, t } = renderLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw, state);
  const trimmed = text.trimEnd();
  const line: LogLine = { h: html };
  if (t !== undefined) line.t = t;
  if (trimmed === '^^^ +++') {
    line.h = '';
    line.x = 1;
    return line;
  }
  const header = HEADER.exec(trimmed);
  if (header) {
    // The header's text, without its colours: a section's title reads as one label.
    line.h = escapeHtml(header[2]!);
    // cast: HEADER's first group is one of the three markers.
    line.g = header[1] as LogLine['g'];
  }
  return line;
}

/**
 * `text` (whole lines: each ends in a newline, unless `final`) as the viewer's lines, from
 * `style`; returns the style at its end for the next part of the log.
 */
export function renderLogLines(text: string, style: LogStyle): { lines: LogLine[]; style: LogStyle } {
  const state = { style };
  const raw = text.split('\n');
  if (raw[raw.length - 1] === '') raw.pop();
  return { lines: raw.map((l) => renderLogLine(l, state)), style: state.style };
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
