/**
 * Annotation bodies to HTML: ordinary Markdown renders (the docs' own examples byte for byte),
 * and no payload of a list of known XSS vectors (OWASP's filter evasion cheat sheet and the
 * like: encoded, mixed-case, split and nested forms, SVG and MathML, styles and expressions,
 * frames, meta refreshes, forms) leaves anything that runs script.
 */
import { renderAnnotationBody, renderAnnotationHtml } from '../../src/annotations/render';
import { ValidationError } from '../../src/core/errors';

const PAYLOADS: string[] = [
  '<script>alert(1)</script>',
  '<SCRIPT SRC=https://xss.example/xss.js></SCRIPT>',
  '<ScRiPt>alert(1)</sCrIpT>',
  '<scr<script>ipt>alert(1)</scr</script>ipt>',
  '<IMG SRC="javascript:alert(\'XSS\');">',
  '<IMG SRC=JaVaScRiPt:alert(1)>',
  '<IMG SRC=`javascript:alert("RSnake says, \'XSS\'")`>',
  '<img src=x onerror=alert(1)>',
  '<IMG """><SCRIPT>alert("XSS")</SCRIPT>"\\>',
  '<IMG SRC=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;&#97;&#108;&#101;&#114;&#116;&#40;&#49;&#41;>',
  '<IMG SRC=&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A&#x61&#x6C&#x65&#x72&#x74&#x28&#x31&#x29>',
  '<IMG SRC="jav\tascript:alert(1);">',
  '<IMG SRC="jav&#x09;ascript:alert(1);">',
  '<IMG SRC="jav&#x0A;ascript:alert(1);">',
  '<IMG SRC=" &#14;  javascript:alert(1);">',
  '<a href="javascript:alert(1)">click</a>',
  '<a href="JAVASCRIPT:alert(1)">click</a>',
  '<a href="vbscript:msgbox(1)">click</a>',
  '<a href="VbScRiPt:msgbox(1)">click</a>',
  '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">click</a>',
  '<a href="DATA:text/html,<script>alert(1)</script>">click</a>',
  '[click](javascript:alert(1))',
  '[click](JaVaScRiPt:alert(1))',
  '[click](vbscript:msgbox(1))',
  '[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '![x](javascript:alert(1))',
  '[click](&#106;avascript:alert(1))',
  '<svg onload=alert(1)>',
  '<svg><script>alert(1)</script></svg>',
  '<svg><a xlink:href="javascript:alert(1)"><text x="20" y="20">XSS</text></a></svg>',
  '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
  '<math href="javascript:alert(1)">CLICKME</math>',
  '<BODY ONLOAD=alert(1)>',
  '<div style="background-image: url(javascript:alert(1))">x</div>',
  '<div style="width: expression(alert(1));">x</div>',
  '<STYLE>li {list-style-image: url("javascript:alert(1)");}</STYLE><UL><LI>XSS</br>',
  '<LINK REL="stylesheet" HREF="javascript:alert(1);">',
  '<iframe src="javascript:alert(1)"></iframe>',
  '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
  '<META HTTP-EQUIV="refresh" CONTENT="0;url=javascript:alert(1);">',
  '<META HTTP-EQUIV="refresh" CONTENT="0;url=data:text/html base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg">',
  '<form action="javascript:alert(1)"><input type="submit"></form>',
  '<button formaction="javascript:alert(1)">x</button>',
  '<object data="javascript:alert(1)"></object>',
  '<embed src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
  '<TABLE BACKGROUND="javascript:alert(1)"><TD BACKGROUND="javascript:alert(1)">x</TD></TABLE>',
  '<details open ontoggle=alert(1)>x</details>',
  '<a href="#" onclick="alert(1)" onmouseover=alert(1)>x</a>',
  '<img src="x" OnErRoR="alert(1)">',
  '<base href="javascript:alert(1)//">',
  '<input autofocus onfocus=alert(1)>',
  '<video><source onerror="alert(1)"></video>',
  '<a href="&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000049&#0000041">x</a>',
  '<!--[if gte IE 4]><SCRIPT>alert(1);</SCRIPT><![endif]-->',
  '<a href="java\0script:alert(1)">x</a>',
  '<img src="data:image/svg+xml,<svg onload=alert(1)>">',
];

/** What must never be in the HTML of an annotation. */
function assertInert(html: string): void {
  const lower = html.toLowerCase();
  expect(lower).not.toMatch(/<script/);
  expect(lower).not.toMatch(/<(iframe|object|embed|meta|link|base|form|input|button|svg|math|style|body|video|source)\b/);
  // Any on* attribute: a tag's attribute list holds none.
  expect(lower).not.toMatch(/<[a-z][^>]*\son[a-z]+\s*=/);
  // No URL attribute with a script or data scheme, nor any style attribute.
  expect(lower).not.toMatch(/(href|src|action|formaction|background|cite)\s*=\s*["']?\s*(javascript|vbscript|data):/);
  expect(lower).not.toMatch(/<[a-z][^>]*\sstyle\s*=/);
}

describe('annotation bodies', () => {
  it(`leave nothing that runs script of ${PAYLOADS.length} known XSS payloads`, async () => {
    expect(new Set(PAYLOADS).size).toBe(PAYLOADS.length);
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(25);
    for (const payload of PAYLOADS) {
      const html = await renderAnnotationBody(payload);
      try {
        assertInert(html);
      } catch (error) {
        throw new Error(`${payload}\n  became ${html}\n${String(error)}`);
      }
      // Inside Markdown around it too.
      assertInert(await renderAnnotationBody(`# Report\n\nSome text ${payload} more\n\n- item ${payload}\n`));
    }
  });

  it('keep the text of a removed tag as text, escaped', async () => {
    expect(await renderAnnotationBody('<marquee>hi</marquee> <b>bold</b>')).toBe('<p>hi <b>bold</b></p>\n');
    expect(await renderAnnotationBody('a < b & c')).toBe('<p>a &lt; b &amp; c</p>\n');
  });

  it("render the docs' examples as the docs show them", async () => {
    expect(await renderAnnotationBody('Hello world!')).toBe('<p>Hello world!</p>\n');
    expect(await renderAnnotationBody('Test results: 42 passed')).toBe('<p>Test results: 42 passed</p>\n');
    expect(await renderAnnotationBody('<h1>My Markdown Heading</h1>\n<img src="artifact://indy.png" alt="Belongs in a museum" height=250 />')).toBe(
      '<h1>My Markdown Heading</h1>\n<img src="artifact://indy.png" alt="Belongs in a museum" height="250" />',
    );
    expect(await renderAnnotationBody('Read the <a href="artifact://coverage/index.html">uploaded coverage report</a>')).toBe(
      '<p>Read the <a href="artifact://coverage/index.html">uploaded coverage report</a></p>\n',
    );
  });

  it('render ordinary Markdown: headings, emphasis, lists, tables, code, links and images', async () => {
    expect(await renderAnnotationBody('# Title\n## Sub')).toBe('<h1>Title</h1>\n<h2>Sub</h2>\n');
    expect(await renderAnnotationBody('**bold** _it_ ~~gone~~ `x < y`')).toBe('<p><strong>bold</strong> <em>it</em> <s>gone</s> <code>x &lt; y</code></p>\n');
    expect(await renderAnnotationBody('- one\n- two\n\n1. a\n2. b')).toBe('<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n');
    expect(await renderAnnotationBody('| Test | Time |\n|:-----|-----:|\n| a | 1s |')).toBe(
      '<table>\n<thead>\n<tr>\n<th align="left">Test</th>\n<th align="right">Time</th>\n</tr>\n</thead>\n' +
        '<tbody>\n<tr>\n<td align="left">a</td>\n<td align="right">1s</td>\n</tr>\n</tbody>\n</table>\n',
    );
    // markdown-it's `language-ruby` is no class of the docs' list.
    expect(await renderAnnotationBody('```ruby\nputs "<hi>"\n```')).toBe('<pre><code>puts "&lt;hi&gt;"\n</code></pre>\n');
    expect(await renderAnnotationBody('[docs](https://buildkite.com/docs "Docs") and <mailto:ops@example.com>')).toBe(
      '<p><a href="https://buildkite.com/docs" title="Docs">docs</a> and <a href="mailto:ops@example.com">mailto:ops@example.com</a></p>\n',
    );
    expect(await renderAnnotationBody('![coverage](artifact://coverage/badge.png) [report](artifact://coverage/index.html)')).toBe(
      '<p><img src="artifact://coverage/badge.png" alt="coverage" /> <a href="artifact://coverage/index.html">report</a></p>\n',
    );
    expect(await renderAnnotationBody('<details><summary>Logs</summary>\n\n```\nok\n```\n</details>')).toBe(
      '<details><summary>Logs</summary>\n<pre><code>ok\n</code></pre>\n</details>',
    );
    expect(await renderAnnotationBody('<div class="flex"><span class="h3">ok</span></div>')).toBe('<div class="flex"><span class="h3">ok</span></div>');
    expect(await renderAnnotationBody('> quoted\n\n---')).toBe('<blockquote>\n<p>quoted</p>\n</blockquote>\n<hr />\n');
    expect(await renderAnnotationBody('[rel](/docs/page)')).toBe('<p><a href="/docs/page">rel</a></p>\n');
    // GitHub Flavored Markdown's autolinks; a bare javascript: URL is no link.
    expect(await renderAnnotationBody('See https://buildkite.com/docs now')).toBe(
      '<p>See <a href="https://buildkite.com/docs">https://buildkite.com/docs</a> now</p>\n',
    );
    expect(await renderAnnotationBody('javascript:alert(1)')).toBe('<p>javascript:alert(1)</p>\n');
  });

  it("keep links of the docs' schemes: http(s), mailto, itms-services, relative (and artifact://)", async () => {
    expect(await renderAnnotationBody('[Install](itms-services://?action=download-manifest&url=https://example.com/app.plist)')).toBe(
      '<p><a href="itms-services://?action=download-manifest&amp;url=https://example.com/app.plist">Install</a></p>\n',
    );
    expect(await renderAnnotationBody('<a href="ITMS-SERVICES://?action=download-manifest">x</a> <a href="ftp://example.com/f">y</a>')).toBe(
      '<p><a href="ITMS-SERVICES://?action=download-manifest">x</a> <a>y</a></p>\n',
    );
  });

  it("keep only the classes of the docs' list (Basscss, and terminal output's)", async () => {
    expect(await renderAnnotationBody('<div class="flex evil p2 js-hook">x</div>')).toBe('<div class="flex p2">x</div>');
    expect(await renderAnnotationBody('<span class="sm-flex fixed">x</span> <span class="bg-red white">y</span>')).toBe(
      '<p><span>x</span> <span class="bg-red white">y</span></p>\n',
    );
    // The docs' way to show terminal-to-html's own output.
    expect(await renderAnnotationBody('<pre class="term"><code><span class="term-fg31 term-fgx208 term-fgx256 term-container">x</span></code></pre>')).toBe(
      '<pre class="term"><code><span class="term-fg31 term-fgx208">x</span></code></pre>',
    );
    // `title` is no attribute of every element.
    expect(await renderAnnotationBody('<div title="t">x</div> <abbr title="Continuous Integration">CI</abbr>')).toBe(
      '<div>x</div> <abbr title="Continuous Integration">CI</abbr>',
    );
  });

  it('render a term or terminal block as terminal output, its ANSI colours as classes', async () => {
    const red = await renderAnnotationBody('```term\nThis is a \u001b[0;31mtest\u001b[0m\n\u001b[31mred\u001b[0m\n```');
    expect(red).toBe('<pre class="term"><code>This is a <span class="term-fg31">test</span>\n<span class="term-fg31">red</span>\n</code></pre>\n');
    expect(red).not.toContain('\u001b');
    // Styles carry across lines; bright, background, 256 colours, bold; true colour has no class; other escapes are dropped.
    expect(
      await renderAnnotationBody(
        '```terminal\n\u001b[1;32mok\nstill\u001b[22m\u001b[97;41m!\u001b[0m \u001b[38;5;208mx\u001b[38;2;1;2;3my\u001b[0m\n\u001b]0;title\u0007\u001b[2K\u001b[1A<b>&</b>\u001b\n```',
      ),
    ).toBe(
      '<pre class="term"><code><span class="term-fg32 term-fg1">ok</span>\n<span class="term-fg32 term-fg1">still</span>' +
        '<span class="term-fgi97 term-bg41">!</span> <span class="term-fgx208">x</span>y\n&lt;b&gt;&amp;&lt;/b&gt;\n</code></pre>\n',
    );
  });

  it('render only the first 10 term blocks of an annotation as terminal output, later ones as plain code', async () => {
    const body = Array.from({ length: 11 }, (_, i) => `\`\`\`${i % 2 ? 'term' : 'terminal'}\n\u001b[31mred ${i + 1}\u001b[0m\n\`\`\``).join('\n\n');
    const html = await renderAnnotationBody(body);
    expect(html.match(/<pre class="term"><code><span class="term-fg31">red \d+<\/span>\n<\/code><\/pre>/g)).toHaveLength(10);
    expect(html).toContain('<span class="term-fg31">red 10</span>');
    expect(html.endsWith('<pre><code>red 11\n</code></pre>\n')).toBe(true);
    expect(html).not.toContain('\u001b');
    // Another annotation has its own 10.
    expect(await renderAnnotationBody('```term\n\u001b[31mred\u001b[0m\n```')).toBe(
      '<pre class="term"><code><span class="term-fg31">red</span>\n</code></pre>\n',
    );
  });

  it('render off the thread that answers requests: the event loop keeps turning while a 1 MiB body renders', async () => {
    const para = 'Some **bold** text, a [link](https://example.com), `code` and <b>html</b>.\n\n| a | b |\n|--:|---|\n| 1 | 2 |\n\n';
    const body = para.repeat(Math.floor((1024 * 1024) / para.length));
    let turns = 0;
    let rendering = true;
    const spin = () => {
      if (!rendering) return;
      turns += 1;
      setImmediate(spin);
    };
    setImmediate(spin);
    const [big, small] = await Promise.all([renderAnnotationBody(body), renderAnnotationBody('**small**')]);
    rendering = false;
    // On this thread the render would be one long task: no turn of the loop could come between.
    expect(turns).toBeGreaterThan(100);
    expect(big.startsWith('<p>Some <strong>bold</strong> text, a <a href="https://example.com">link</a>, <code>code</code> and <b>html</b>.</p>')).toBe(true);
    expect(small).toBe('<p><strong>small</strong></p>\n');
  });

  it('refuse a body whose HTML is longer than the bound (16 MiB in the service)', async () => {
    // Each `|` of a right-aligned table becomes <td align="right"></td>: far longer than its Markdown.
    const table = '| a | b |\n|--:|--:|\n' + '|||\n'.repeat(50);
    expect((await renderAnnotationHtml(table, 10_000)).length).toBeGreaterThan(2000);
    let thrown: unknown;
    try {
      await renderAnnotationHtml(table, 1000);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as ValidationError).errors).toEqual([{ field: 'body', code: 'renders to more than 1000 characters of HTML' }]);
  });
});
