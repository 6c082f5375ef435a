/**
 * The terminal reading both log renderers share (src/builds/jobs/log-lines.ts): pure functions,
 * no store. What each renderer makes of it is in test/web/log.test.ts.
 */
import { applySgr, type LogColours, PLAIN_STYLE, renderTerminalLine, sectionLine, splitLogLines } from '../../../src/builds/jobs/log-lines';

const PALETTE: LogColours = { hex: false, faint: false };
const EVERY: LogColours = { hex: true, faint: true };

describe('applySgr', () => {
  it('sets and resets the 16 colours, bold, italic and underline the same way for both renderers', () => {
    for (const colours of [PALETTE, EVERY]) {
      const set = applySgr(PLAIN_STYLE, '1;3;4;31;102', colours);
      expect(set).toEqual({ ...PLAIN_STYLE, fg: 1, bg: 10, bold: true, italic: true, underline: true });
      expect(applySgr(set, '22;23;24;39;49', colours)).toEqual(PLAIN_STYLE);
      expect(applySgr(set, '', colours)).toEqual(PLAIN_STYLE);
      expect(applySgr(set, '0', colours)).toEqual(PLAIN_STYLE);
    }
  });

  it('keeps the colour before a 256 or true colour past the palette, and ignores faint, when the renderer draws neither', () => {
    const red = applySgr(PLAIN_STYLE, '31', PALETTE);
    expect(applySgr(red, '38;5;9', PALETTE)).toEqual({ ...PLAIN_STYLE, fg: 9 });
    expect(applySgr(red, '38;5;200;48;2;1;2;3;2', PALETTE)).toEqual(red);
  });

  it('maps 256 colours to the xterm cube and greys and true colour to hex, and keeps faint, when the renderer draws them', () => {
    expect(applySgr(PLAIN_STYLE, '38;5;16;48;5;232;2', EVERY)).toEqual({ ...PLAIN_STYLE, fg: '000000', bg: '080808', faint: true });
    expect(applySgr(PLAIN_STYLE, '38:2:300:0:16', EVERY)).toEqual({ ...PLAIN_STYLE, fg: 'ff0010' });
    // A colour without its values changes nothing, and the codes after it still apply.
    expect(applySgr(PLAIN_STYLE, '38;5', EVERY)).toEqual(PLAIN_STYLE);
  });
});

describe('renderTerminalLine', () => {
  it('escapes the text, drops other escapes, keeps what a carriage return redrew last, and carries the style on', () => {
    const state = { style: PLAIN_STYLE };
    expect(renderTerminalLine('10%\r\x1b[2K\x1b]8;;http://x\x07<b>\x1b[1;38;5;200m&\x1b[22mx\r', state, EVERY)).toEqual({
      html: '&lt;b&gt;<span class="a-b" data-fg="ff00d7">&amp;</span><span data-fg="ff00d7">x</span>',
      text: '<b>&x',
    });
    expect(renderTerminalLine('next', state, EVERY).html).toBe('<span data-fg="ff00d7">next</span>');
  });
});

describe('sectionLine', () => {
  it("reads Buildkite's section headers and ^^^ +++ from a line's plain text", () => {
    expect(sectionLine('--- Setup  ')).toEqual({ marker: '---', title: 'Setup' });
    expect(sectionLine('~~~ quiet')).toEqual({ marker: '~~~', title: 'quiet' });
    expect(sectionLine('+++ Tests')).toEqual({ marker: '+++', title: 'Tests' });
    expect(sectionLine('^^^ +++ ')).toBe('expand');
    for (const plain of ['---', '+++ ', ' --- x', '*** x', '^^^']) expect(sectionLine(plain)).toBeNull();
  });
});

describe('splitLogLines', () => {
  it('ends the last line at a final newline', () => {
    expect(splitLogLines('a\n\nb\n')).toEqual(['a', '', 'b']);
    expect(splitLogLines('a\nb')).toEqual(['a', 'b']);
    expect(splitLogLines('')).toEqual([]);
  });
});
