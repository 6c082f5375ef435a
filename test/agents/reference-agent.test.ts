import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runAgents } from '../../src/cli/agent';
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline, givenRegistrationToken } from './helpers';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describeEachDatabase('the reference agent, end to end on loopback', (ctx) => {
  let server: http.Server;
  let endpoint: string;

  beforeAll(async () => {
    server = http.createServer(ctx().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('runs a pipeline with a wait, a soft failure, a parallel step and a block step', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const slug = await givenPipeline(
      ctx(),
      org.slug,
      token,
      [
        'steps:',
        '  - label: hello',
        '    command: echo "hello $BUILDKITE_BUILD_NUMBER from $BUILDKITE_PIPELINE_SLUG in $(basename $PWD)"',
        '  - wait',
        '  - command: echo soft; exit 3',
        '    soft_fail:',
        '      - exit_status: 3',
        '  - command: echo "part $BUILDKITE_PARALLEL_JOB of $BUILDKITE_PARALLEL_JOB_COUNT"',
        '    parallelism: 3',
        '  - block: Ship',
        '  - command: echo shipped >&2; exit 0',
      ].join('\n'),
    );
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const controller = new AbortController();
    const agents = runAgents({ endpoint, token: reg, tags: ['queue=default'], name: 'e2e', spawn: 2, pollIntervalMs: 20, signal: controller.signal });
    const read = async () => (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    /** Polls the build (bounded) until it satisfies `done`. */
    const until = async (done: (b: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 1000; i++) {
        const b = await read();
        if (done(b)) return b;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`the build never got there: ${JSON.stringify(await read())}`);
    };
    try {
      let b = await until((x) => x.blocked === true);
      expect(b).toMatchObject({ state: 'passed', blocked: true });
      expect(b.started_at).toMatch(ISO);
      expect(b.finished_at).toMatch(ISO);
      const jobs = b.jobs as { id: string; state: string; exit_status?: number | null; soft_failed?: boolean; type: string; log_url?: string; agent?: { name: string } | null }[];
      expect(jobs.map((j) => j.state)).toEqual(['passed', 'passed', 'failed', 'passed', 'passed', 'passed', 'blocked', 'waiting']);
      expect(jobs[2]).toMatchObject({ exit_status: 3, soft_failed: true });
      expect(jobs[0]!.agent?.name).toMatch(/^e2e-[12]$/);
      const log = async (id: string) => (await ctx().http().get(`${url}/jobs/${id}/log.txt`).set(auth(token)).expect(200)).text;
      expect(await log(jobs[0]!.id)).toMatch(new RegExp(`^hello ${build.number} from ${slug} in windsock-build-`));
      expect(await log(jobs[2]!.id)).toBe('soft\n');
      expect(new Set(await Promise.all([3, 4, 5].map((i) => log(jobs[i]!.id))))).toEqual(new Set(['part 0 of 3\n', 'part 1 of 3\n', 'part 2 of 3\n']));

      await ctx().http().put(`${url}/jobs/${jobs[6]!.id}/unblock`).set(auth(token)).send({}).expect(200);
      b = await until((x) => x.blocked === false && x.finished_at !== null);
      expect(b.state).toBe('passed');
      const last = (b.jobs as { id: string; state: string; exit_status: number }[])[7]!;
      expect(last).toMatchObject({ state: 'passed', exit_status: 0 });
      expect(await log(last.id)).toBe('shipped\n');
    } finally {
      controller.abort();
      await agents;
    }
    const list = await ctx().http().get(`/v2/organizations/${org.slug}/agents`).set(auth(token));
    expect(list.body.map((a: { connection_state: string }) => a.connection_state)).toEqual(['disconnected', 'disconnected']);
  });

  it('kills the job\'s whole process group when the agent stops, and reports it failed', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const slug = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: echo started; sleep 30 & sleep 30; wait\n');
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const controller = new AbortController();
    const agents = runAgents({ endpoint, token: reg, tags: [], name: 'stopper', spawn: 1, pollIntervalMs: 20, signal: controller.signal });
    const jobId = build.jobs[0]!.id;
    for (let i = 0; i < 500 && !(await ctx().http().get(`${url}/jobs/${jobId}/log.txt`).set(auth(token))).text.includes('started'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const started = Date.now();
    controller.abort();
    await agents;
    expect(Date.now() - started).toBeLessThan(10_000);
    const b = (await ctx().http().get(url).set(auth(token))).body;
    expect(b.jobs[0]).toMatchObject({ state: 'failed', exit_status: 137 });
    expect(b.state).toBe('failed');
  });
});
