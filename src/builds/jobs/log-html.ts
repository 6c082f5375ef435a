/**
 * A job's log as HTML: its lines as the terminal showed them (./log-lines.ts: escaped text, the
 * 16 colours, bold, italic and underline as classes), and Buildkite's section headers fold the
 * lines under them: `--- ` and `~~~ `
 * open a collapsed group (`~~~` ones de-emphasized), `+++ ` an expanded one, and `^^^ +++`
 * expands the group before it; when no group is expanded, the last `---` one is
 * (https://buildkite.com/docs/pipelines/managing-log-output).
 */
import { escapeHtml } from '../../core/escape-html';
import { type LogColours, PLAIN_STYLE, renderTerminalLine, sectionLine, splitLogLines, type SectionMarker } from './log-lines';

// The 16 colours only: the others would need inline styles, which the CSP forbids (the viewer,
// src/web/log.ts, applies them through the CSSOM instead).
const COLOURS: LogColours = { hex: false, faint: false };

interface Group {
  header: string | null;
  kind: SectionMarker | null;
  open: boolean;
  lines: string[];
}

/** The log as HTML groups (see the module comment). */
export function renderLog(log: string): string {
  const state = { style: PLAIN_STYLE };
  const groups: Group[] = [{ header: null, kind: null, open: true, lines: [] }];
  for (const raw of splitLogLines(log)) {
    const { html, text } = renderTerminalLine(raw, state, COLOURS);
    const section = sectionLine(text);
    if (section === 'expand') {
      groups[groups.length - 1]!.open = true;
      continue;
    }
    if (section) {
      // The header's text, without its colours: a summary reads as one label.
      groups.push({ header: escapeHtml(section.title), kind: section.marker, open: section.marker === '+++', lines: [] });
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
