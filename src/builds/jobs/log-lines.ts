/**
 * A job's log line as the terminal showed it, for both renderers of logs: the whole log as folded
 * HTML (./log-html.ts, the REST API's `.../log.html` and the pages) and the log viewer's numbered
 * lines (src/web/log.ts). The text is always escaped, never read as markup; SGR colours and
 * attributes become spans with classes (`a-f<n>`/`a-g<n>` the 16 palette colours, `a-b` bold,
 * `a-d` faint, `a-i` italic, `a-u` underline), other cursor and terminal escapes are dropped, and
 * a carriage return keeps what was redrawn last. The two renderers differ only in what they draw
 * beyond the palette (`LogColours`). Also Buildkite's section markers, which both fold by
 * (https://buildkite.com/docs/pipelines/managing-log-output).
 */
import { escapeHtml } from '../../core/escape-html';
import { isOneOf } from '../../db/row-types';

/** A colour: a palette index 0-15 (a class), or 6 hex digits (256-colour cube, greys, true colour). */
export type Colour = number | string | null;

export interface LogStyle {
  fg: Colour;
  bg: Colour;
  bold: boolean;
  faint: boolean;
  italic: boolean;
  underline: boolean;
}

export const PLAIN_STYLE: LogStyle = { fg: null, bg: null, bold: false, faint: false, italic: false, underline: false };

/** What a renderer draws beyond the 16 colours, bold, italic and underline. */
export interface LogColours {
  /**
   * 256 colours past the palette and true colour, as `data-fg`/`data-bg` hex values (the pages'
   * CSP allows no style attributes: the viewer applies them through the CSSOM). Without, such a
   * colour leaves the one before it.
   */
  hex: boolean;
  /** SGR 2 as `a-d`; without, it is ignored. */
  faint: boolean;
}

// CSI sequences (colours, cursor moves), OSC and APC strings (titles, links, Buildkite's `_bk;t=` timestamps), lone escapes.
// eslint-disable-next-line no-control-regex -- matching terminal control characters is the point
const ESCAPE = /\x1b\[([0-9;:?]*)([\x40-\x7e])|\x1b[\]_P^][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[\x40-\x5f]?/g;

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

/** An SGR sequence's parameters (`1;33`) applied to `style`. */
export function applySgr(style: LogStyle, params: string, colours: LogColours): LogStyle {
  const s = { ...style };
  const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => Number(p) || 0);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) Object.assign(s, PLAIN_STYLE);
    else if (c === 1) s.bold = true;
    else if (c === 2) s.faint = colours.faint;
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
      const n = codes[i + 2];
      let value: Colour | undefined;
      if (mode === 5 && n !== undefined) value = colours.hex || n < 16 ? colour256(Math.min(255, n)) : undefined;
      else if (mode === 2 && codes[i + 4] !== undefined && colours.hex) value = hex2(n!) + hex2(codes[i + 3]!) + hex2(codes[i + 4]!);
      if (value !== undefined) {
        if (c === 38) s.fg = value;
        else s.bg = value;
      }
      i += mode === 5 ? 2 : mode === 2 ? 4 : 1;
    }
  }
  return s;
}

/** The span a run of text in `s` is drawn in; '' for the plain style. */
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

/**
 * One line (no newline; a trailing carriage return is the line's end, not a redraw) -> escaped
 * HTML with spans, and its plain text; `state.style` carries across lines.
 */
export function renderTerminalLine(line: string, state: { style: LogStyle }, colours: LogColours): { html: string; text: string } {
  if (line.endsWith('\r')) line = line.slice(0, -1);
  // A carriage return (a progress bar redrawing) leaves what was written after it.
  const cr = line.lastIndexOf('\r');
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
    if (m[2] === 'm' && m[1] !== undefined) state.style = applySgr(state.style, m[1], colours);
    last = m.index + m[0].length;
    if (m[0].length === 0) ESCAPE.lastIndex++;
  }
  emit(line.slice(last));
  return { html: out, text };
}

/** `text` split into lines: a final newline ends the last line, it does not start another. */
export function splitLogLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Buildkite's section headers: `---` collapsed, `+++` expanded, `~~~` collapsed and de-emphasized. */
export const SECTION_MARKERS = ['---', '+++', '~~~'] as const;
export type SectionMarker = (typeof SECTION_MARKERS)[number];

const HEADER = /^(---|\+\+\+|~~~) (.*)$/;

/**
 * What a line's plain text says about the sections: a header (its marker and title), `^^^ +++`
 * (expand the section before it), or nothing.
 */
export function sectionLine(text: string): { marker: SectionMarker; title: string } | 'expand' | null {
  const trimmed = text.trimEnd();
  if (trimmed === '^^^ +++') return 'expand';
  const header = HEADER.exec(trimmed);
  return header && isOneOf(SECTION_MARKERS, header[1]) ? { marker: header[1], title: header[2]! } : null;
}
