/**
 * Perl's OpenAPI::Client (Debian's libopenapi-client-perl), a client that builds its methods from
 * the spec at run time, loading the OpenAPI 3.0.3 rendering (generated/openapi-3.0.json) from
 * disk, run against a live Windsock: it lists pipelines, creates a build, pages through builds by
 * following `Link`, lists flaky tests, and reads the errors of a refused build and an unknown
 * pipeline (clients/perl/windsock-smoke.pl).
 */
import path from 'node:path';
import { databases } from '../support/context';
import { describeWithTool } from '../support/tools';
import { givenSdkData, liveWindsock, runJson, smokeBuild, smokeEnv, type LiveWindsock, type SdkData } from './support';

const SCRIPT = path.resolve(__dirname, '../../clients/perl/windsock-smoke.pl');

interface SmokeReport {
  pipelines: string[];
  created: Record<string, unknown>;
  pages: number[][];
  flaky: { name: string; instances: number }[];
  validation: { status: number; errors: string[] };
  not_found: { status: number; message: string };
  spec_mismatches: string[];
}

describeWithTool('perl-openapi-client').each(databases)('Perl’s OpenAPI::Client against a live Windsock [%s]', (kind) => {
  let live: LiveWindsock;
  let data: SdkData;

  beforeAll(async () => {
    live = await liveWindsock(kind);
    data = await givenSdkData(live.ctx);
  });
  afterAll(async () => {
    await live?.close();
  });

  it('lists pipelines, creates a build, pages through builds, lists flaky tests and reads errors', async () => {
    const out = await runJson<SmokeReport>('perl', [SCRIPT], {
      ...smokeEnv(live, data),
      ...(process.env.WINDSOCK_SPEC ? { WINDSOCK_SPEC: process.env.WINDSOCK_SPEC } : {}),
    });
    expect(out.pipelines).toEqual([...data.pipelines].reverse());
    expect(out.created).toEqual(smokeBuild(live, data, 'Perl'));
    // main's builds, newest first, two a page, each next page the one `Link: rel="next"` named.
    expect(out.pages).toEqual([[6, 4], [3, 2], [1]]);
    expect(out.flaky).toEqual([{ name: data.flakyTest, instances: 1 }]);
    // Refused by the client against the spec before it was sent.
    expect(out.validation).toEqual({ status: 400, errors: ['/body/branch'] });
    expect(out.not_found).toEqual({ status: 404, message: 'No pipeline found' });
    // Every answer's body is what the 3.0 rendering says (checked by the client's own validator).
    expect(out.spec_mismatches).toEqual([]);
  });
});
