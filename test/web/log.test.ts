/** The log renderer (src/web/log.ts) and the HTML template's escaping: pure functions, no store. */
import { html, trustedHtml } from '../../src/web/html';
import { decodeLogState, encodeLogState, PLAIN_STYLE, renderLog, renderLogLines } from '../../src/web/log';
import { safeNext } from '../../src/web/routes';

describe('renderLog', () => {
  it('escapes the text of the log and turns SGR colours into classes, carrying them across lines', () => {
    const out = renderLog('<script>alert(1)</script> & "q"\n\x1b[1;33mwarn\nstill\x1b[0m plain\n');
    expect(out).toBe(
      '<pre class="log-lines">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;\n<span class="a-f3 a-b">warn</span>\n<span class="a-f3 a-b">still</span> plain</pre>',
    );
  });

  it('keeps the first 16 of 256 colours, drops true colour, cursor moves, OSC links and Buildkite timestamps', () => {
    const out = renderLog('\x1b[38;5;9mred\x1b[38;2;1;2;3m same\x1b[0m\x1b[2K\x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b_bk;t=1700000000000\x07done\n');
    expect(out).toBe('<pre class="log-lines"><span class="a-f9">red</span><span class="a-f9"> same</span>link done</pre>');
  });

  it('keeps what a carriage return redrew last', () => {
    expect(renderLog('10%\r50%\r100%\r\n')).toBe('<pre class="log-lines">100%</pre>');
  });

  it('opens the last --- section when none is expanded', () => {
    expect(renderLog('--- one\na\n--- two\nb\n~~~ quiet\nc\n')).toBe(
      '<details class="log-group"><summary>one</summary><pre class="log-lines">a</pre></details>' +
        '<details class="log-group" open><summary>two</summary><pre class="log-lines">b</pre></details>' +
        '<details class="log-group log-group-quiet"><summary>quiet</summary><pre class="log-lines">c</pre></details>',
    );
  });

  it('folds --- and ~~~ (quieter) sections, opens +++ ones, and ^^^ +++ opens the section before it', () => {
    const out = renderLog('before\n--- Setup <x>\na\n~~~ Old style\nb\n+++ Tests\nc\n--- Deploy\n^^^ +++\nd\n');
    expect(out).toBe(
      '<pre class="log-lines">before</pre>' +
        '<details class="log-group"><summary>Setup &lt;x&gt;</summary><pre class="log-lines">a</pre></details>' +
        '<details class="log-group log-group-quiet"><summary>Old style</summary><pre class="log-lines">b</pre></details>' +
        '<details class="log-group" open><summary>Tests</summary><pre class="log-lines">c</pre></details>' +
        '<details class="log-group" open><summary>Deploy</summary><pre class="log-lines">d</pre></details>',
    );
  });
});

describe('renderLogLines (the log viewer)', () => {
  it('gives one line per line: escaped, headers as plain titles, ^^^ +++ as a marker, times kept', () => {
    const { lines, style } = renderLogLines(
      '\x1b_bk;t=1700000000123\x07--- \x1b[1mSetup <x>\x1b[0m\nplain & "q"\n^^^ +++\n~~~ quiet\n+++ open\n10%\r100%\n',
      PLAIN_STYLE,
    );
    expect(lines).toEqual([
      { h: 'Setup &lt;x&gt;', g: '---', t: 1700000000123 },
      { h: 'plain &amp; &quot;q&quot;' },
      { h: '', x: 1 },
      { h: 'quiet', g: '~~~' },
      { h: 'open', g: '+++' },
      { h: '100%' },
    ]);
    expect(style).toEqual(PLAIN_STYLE);
  });

  it('maps 256 colours to classes (0-15) or the xterm cube and greys, true colour to hex, and keeps faint', () => {
    const { lines, style } = renderLogLines('\x1b[38;5;1ma\x1b[38;5;16mb\x1b[38;5;231mc\x1b[48;5;232md\x1b[2;38;2;300;0;16me\n', PLAIN_STYLE);
    expect(lines[0]!.h).toBe(
      '<span class="a-f1">a</span><span data-fg="000000">b</span><span data-fg="ffffff">c</span>' +
        '<span data-fg="ffffff" data-bg="080808">d</span><span class="a-d" data-fg="ff0010" data-bg="080808">e</span>',
    );
    expect(encodeLogState(style)).toBe('ff0010~080808~d');
  });

  it('reads back only the state tokens it writes', () => {
    for (const s of [PLAIN_STYLE, { ...PLAIN_STYLE, fg: 3, bg: 'a0b0c0', bold: true, underline: true }]) expect(decodeLogState(encodeLogState(s))).toEqual(s);
    for (const bad of ['x', '16~~', 'ABCDEF~~', '~~q', '~~bb', '1~2~3~4']) expect(decodeLogState(bad)).toBeNull();
  });
});

describe('html', () => {
  it('escapes every interpolated value unless it is already HTML, and renders lists and nothing for null/false', () => {
    const items = ['<a>', "'b'"];
    expect(html`<p title="${'"x"'}">${items.map((i) => html`<i>${i}</i>`)}${null}${false}${trustedHtml('<br>')}${3}</p>`.value).toBe(
      '<p title="&quot;x&quot;"><i>&lt;a&gt;</i><i>&#39;b&#39;</i><br>3</p>',
    );
  });
});

describe('safeNext', () => {
  it('takes only a path on this server', () => {
    expect(safeNext('/org/pipeline?x=1')).toBe('/org/pipeline?x=1');
    for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example/', 'javascript:alert(1)', undefined, ['/a']])
      expect(safeNext(bad)).toBeNull();
  });
});
