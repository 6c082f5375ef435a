/**
 * A job's log as HTML: ANSI colours become spans with classes (the text is always escaped, never
 * read as markup), cursor and terminal escapes are dropped, a carriage return keeps what was
 * redrawn last, and Buildkite's section headers fold the lines under them: `--- ` and `~~~ `
 * open a collapsed group (`~~~` ones de-emphasized), `+++ ` an expanded one, and `^^^ +++`
 * expands the group before it; when no group is expanded, the last `---` one is
 * (https://buildkite.com/docs/pipelines/managing-log-output).
 */
import { escapeHtml } from '../../core/escape-html';

interface Style {
  fg: number | null;
  bg: number | null;
  bold: boolean;
  italic: boolean;
  underline: boolean;
}

const PLAIN: Style = { fg: null, bg: null, bold: false, italic: false, underline: false };
// CSI sequences (colours, cursor moves), OSC and APC strings (titles, links, Buildkite's `_bk;t=` timestamps), lone escapes.
// eslint-disable-next-line no-control-regex -- matching terminal control characters is the point
const ESCAPE = /\x1b\[([0-9;:?]*)([\x40-\x7e])|\x1b[\]_P^][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[\x40-\x5f]?/g;

function applySgr(style: Style, params: string): Style {
  const s = { ...style };
  const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => Number(p) || 0);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) Object.assign(s, PLAIN);
    else if (c === 1) s.bold = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 22) s.bold = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c >= 30 && c <= 37) s.fg = c - 30;
    else if (c >= 90 && c <= 97) s.fg = c - 90 + 8;
    else if (c === 39) s.fg = null;
    else if (c >= 40 && c <= 47) s.bg = c - 40;
    else if (c >= 100 && c <= 107) s.bg = c - 100 + 8;
    else if (c === 49) s.bg = null;
    else if (c === 38 || c === 48) {
      // 256 colours: the first 16 have classes; true colour would need inline styles, which the CSP forbids.
      const mode = codes[i + 1];
      const n = codes[i + 2];
      if (mode === 5 && n !== undefined && n < 16) {
        if (c === 38) s.fg = n;
        else s.bg = n;
      }
      i += mode === 5 ? 2 : mode === 2 ? 4 : 1;
    }
  }
  return s;
}

function classesOf(s: Style): string {
  const c: string[] = [];
  if (s.fg !== null) c.push(`a-f${s.fg}`);
  if (s.bg !== null) c.push(`a-g${s.bg}`);
  if (s.bold) c.push('a-b');
  if (s.italic) c.push('a-i');
  if (s.underline) c.push('a-u');
  return c.join(' ');
}

/** One line (no newline) -> escaped HTML with spans, and its plain text; `style` carries across lines. */
function renderLine(line: string, state: { style: Style }): { html: string; text: string } {
  // A carriage return (a progress bar redrawing) leaves what was written after it.
  const cr = line.lastIndexOf('\r', line.length - 1);
  if (cr >= 0) line = line.slice(cr + 1);
  let out = '';
  let text = '';
  let last = 0;
  const emit = (chunk: string) => {
    if (!chunk) return;
    text += chunk;
    const cls = classesOf(state.style);
    out += cls ? `<span class="${cls}">${escapeHtml(chunk)}</span>` : escapeHtml(chunk);
  };
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(line); m; m = ESCAPE.exec(line)) {
    emit(line.slice(last, m.index));
    if (m[2] === 'm' && m[1] !== undefined) state.style = applySgr(state.style, m[1]);
    last = m.index + m[0].length;
    if (m[0].length === 0) ESCAPE.lastIndex++;
  }
  emit(line.slice(last));
  return { html: out, text };
}

interface Group {
  header: string | null;
  kind: string;
  open: boolean;
  lines: string[];
}

const HEADER = /^(---|\+\+\+|~~~) (.*)$/;

/** The log as HTML groups (see the module comment). */
export function renderLog(log: string): string {
  const state = { style: { ...PLAIN } };
  const groups: Group[] = [{ header: null, kind: '', open: true, lines: [] }];
  const lines = log.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const raw of lines) {
    const { html, text } = renderLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw, state);
    const trimmed = text.trimEnd();
    if (trimmed === '^^^ +++') {
      groups[groups.length - 1]!.open = true;
      continue;
    }
    const header = HEADER.exec(trimmed);
    if (header) {
      // The header's text, without its colours: a summary reads as one label.
      groups.push({ header: escapeHtml(header[2]!), kind: header[1]!, open: header[1] === '+++', lines: [] });
      continue;
    }
    groups[groups.length - 1]!.lines.push(html);
  }
  if (!groups.some((g) => g.header !== null && g.open)) {
    const last = groups.findLast((g) => g.kind === '---');
    if (last) last.open = true;
  }
  let out = '';
  for (const g of groups) {
    const body = `<pre class="log-lines">${g.lines.join('\n')}</pre>`;
    if (g.header === null) {
      if (g.lines.length) out += body;
    } else {
      out += `<details class="log-group${g.kind === '~~~' ? ' log-group-quiet' : ''}"${g.open ? ' open' : ''}><summary>${g.header || '&nbsp;'}</summary>${g.lines.length ? body : ''}</details>`;
    }
  }
  return out;
}
