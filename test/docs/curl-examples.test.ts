/**
 * Every `curl` line of the README and of the pages it moved to docs/ is sent to the service as
 * written (issue 28: README and behaviour agree): its method, its headers, its body. Each line
 * must name an operation of the spec (or one of the few paths outside it), carry what that
 * operation needs (`Authorization` in the operation's scheme; `Content-Type: application/json`
 * beside a JSON body, which the service otherwise refuses with 415), and get an answer the spec
 * documents for it, never a 415 or a 5xx.
 *
 * Variables are read as a shell would from the page's own `export NAME=value` lines; the token,
 * the suite token and the organization are a fresh tenant's (the pages' `default` and `acme`
 * become its slug), and ids the reader would have copied from an earlier answer ($JOB_ID...) are
 * random UUIDs: those lines must still reach their operation (a documented 404 at most).
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase } from '../support/context';
import { onLoopback } from '../support/agents';
import { specDoc, specOperations, type SpecOperation } from '../reliability/spec-operations';
import { curlExamples, EXAMPLE_PAGES, OUTSIDE_SPEC } from './examples';

const operations = specOperations();
const doc = specDoc();

/** The operation a method and a concrete path name (`{VAR}` placeholders match any segment). */
function operationOf(method: string, p: string): SpecOperation | undefined {
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  const segments = p.split('/');
  return operations.find((op) => {
    if (op.method !== m) return false;
    const t = op.path.split('/');
    return t.length === segments.length && t.every((s, i) => s.startsWith('{') || s === segments[i] || /^\{[A-Z_]+\}$/.test(segments[i]!));
  });
}

const documented = (op: SpecOperation): string[] => Object.keys((doc.paths[op.path]![op.method] as { responses: Record<string, unknown> }).responses);

const JUNIT = '<?xml version="1.0"?><testsuites><testsuite name="unit"><testcase classname="app" name="works" time="0.1"/></testsuite></testsuites>';

describe('the curl examples of the README and docs/', () => {
  it('are found on the pages, with their methods', () => {
    const all = EXAMPLE_PAGES.flatMap((p) => curlExamples(p, {}));
    expect(all.length).toBeGreaterThan(100);
    expect(new Set(all.map((e) => e.method))).toEqual(new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']));
    for (const ex of all)
      expect({ at: `${ex.page}:${ex.line}`, url: ex.url }).toEqual({ at: `${ex.page}:${ex.line}`, url: expect.stringMatching(/^(http|\{[A-Z_]+\})/) });
  });

  it('send Content-Type: application/json with every JSON body, and a token wherever the operation needs one', () => {
    const missing: string[] = [];
    for (const ex of EXAMPLE_PAGES.flatMap((p) => curlExamples(p, {}))) {
      const header = (name: string) => ex.headers.find(([h]) => h.toLowerCase() === name)?.[1];
      const at = `${ex.page}:${ex.line} ${ex.text.slice(0, 100)}`;
      if (ex.json !== undefined && header('content-type') !== 'application/json') missing.push(`${at}: a JSON body without Content-Type: application/json`);
      const op = ex.url.startsWith('http') ? operationOf(ex.method, new URL(ex.url).pathname) : undefined;
      const authorization = header('authorization') ?? '';
      if (op?.auth === 'bearer' && !/^Bearer \S+/.test(authorization)) missing.push(`${at}: ${op.operationId} needs Authorization: Bearer`);
      if (op?.auth === 'suiteToken' && !/^Token token="\S+"$/.test(authorization))
        missing.push(`${at}: ${op.operationId} needs Authorization: Token token="..."`);
    }
    expect(missing).toEqual([]);
  });
});

describeEachDatabase('the curl examples of the README and docs/, sent to the service', (ctx) => {
  const server = onLoopback(ctx);

  it('each reaches its operation with what it needs and gets an answer the spec documents (never 415 or 5xx)', async () => {
    const { org, token } = await ctx().givenAdmin();
    // The pages' own objects: a pipeline `my-pipeline` with build 1, a suite `jest` and its upload token.
    const created = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({ name: 'My Pipeline', repository: 'git@github.com:acme-inc/my-pipeline.git', configuration: 'steps:\n  - command: make\n' });
    expect(created.status).toBe(201);
    expect(
      (await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/my-pipeline/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' })).status,
    ).toBe(201);
    const suite = await ctx().http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Jest', show_api_token: true });
    expect(suite.status).toBe(201);
    const base = server.endpoint();
    const given = {
      TOKEN: token,
      WINDSOCK_ADMIN_TOKEN: token,
      SUITE_TOKEN: suite.body.api_token as string,
      PUBLIC_URL: 'http://127.0.0.1:8080',
      BADGE: created.body.badge_url as string,
    };

    const problems: string[] = [];
    let sent = 0;
    for (const page of EXAMPLE_PAGES) {
      for (const ex of curlExamples(page, given)) {
        const at = `${ex.page}:${ex.line} ${ex.text.slice(0, 120)}`;
        // A URL read from an earlier answer (a signed download URL): its headers are checked above; the curl inside that read it is sent.
        if (ex.url === '{SUBST}') continue;
        // The pages' host and organizations are this tenant's; ids copied from earlier answers are random.
        const target = ex.url
          .replace(/^https?:\/\/(127\.0\.0\.1|localhost):8080/, '')
          .replace(/^https?:\/\/windsock\.test/, '')
          .replace(/\/organizations\/(default|acme)(?=\/|$)/, `/organizations/${org.slug}`)
          .replace(/\{[A-Z_]+\}|<[a-z_]+>/g, () => crypto.randomUUID());
        if (!target.startsWith('/')) {
          problems.push(`${at}: no URL the service answers (${ex.url})`);
          continue;
        }
        const pathname = new URL(target, base).pathname;
        const op = operationOf(ex.method, pathname);
        if (!op && !OUTSIDE_SPEC.some((r) => r.test(pathname))) {
          problems.push(`${at}: ${ex.method} ${pathname} is no operation of the spec`);
          continue;
        }
        let body: string | FormData | undefined = ex.json?.replace(/\/organizations\/(default|acme)\//g, `/organizations/${org.slug}/`);
        if (ex.form) {
          const form = new FormData();
          // `-F data=@junit.xml`: a file; here a small JUnit report.
          for (const [k, v] of ex.form) {
            if (v.startsWith('@')) form.append(k, new Blob([JUNIT], { type: 'application/xml' }), v.slice(1));
            else form.append(k, v);
          }
          body = form;
        }
        const res = await fetch(`${base}${target}`, { method: ex.method, headers: ex.headers, body, redirect: 'manual' });
        await res.arrayBuffer();
        sent++;
        const allowed = op ? documented(op) : [];
        if (res.status === 415 || res.status >= 500 || (op && !allowed.includes(String(res.status)) && !allowed.includes('default'))) {
          problems.push(`${at}: ${res.status}${op ? ` (${op.operationId} documents ${allowed.join(', ')})` : ''}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(sent).toBeGreaterThan(100);
    // Over a hundred operations, each validated on its first call (a few hundred ms each on a loaded machine).
  }, 300_000);
});
