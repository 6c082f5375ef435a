/**
 * Two things the real agent relies on: `buildkite-agent step update` retried with the same
 * `idempotency_uuid` changes the step once; and section headers the agent colours (an ANSI
 * escape before `---`, `+++` or `~~~`, as in its own `\x1b[0m~~~ ...`) count as headers for the
 * log's section times exactly as plain ones do. On each store.
 */
import { auth, describeEachDatabase } from '../../support/context';
import { agentAuth, givenBuildAndAgent } from '../../support/agents';
import { countHeaderLines, isHeaderLine } from '../../../src/builds/jobs/log-headers';
import * as stepUpdates from '../../../src/db/migrations/20261127052000_step_updates';
import { existing } from '../../support/rows';

describe('section header lines', () => {
  it('skips the ANSI escapes that open a line, and only those', () => {
    for (const line of [
      '--- x',
      '+++ x',
      '~~~ x',
      '---',
      '\u001b[0m~~~ Preparing',
      '\u001b[32m--- tests\u001b[0m',
      '\u001b[1;33m\u001b[K+++ x',
      '\u001b[0m---',
    ])
      expect([line, isHeaderLine(line)]).toEqual([line, true]);
    for (const line of ['---x', ' --- x', '\u001b[32m---x', 'x \u001b[32m--- x', '\u001b[32mcolour --- x', '\u001b]0;title\u0007--- x', '-- x'])
      expect([line, isHeaderLine(line)]).toEqual([line, false]);
  });

  it('counts coloured headers in a chunk as plain ones, at the start of a line only', () => {
    expect(countHeaderLines('\u001b[0m~~~ a\nout\n\u001b[32m--- b\u001b[0m\n+++ c\n', true)).toBe(3);
    // The chunk continues a line: its first line is not a header however it looks.
    expect(countHeaderLines('\u001b[32m--- a\n--- b\n', false)).toBe(1);
  });
});

describeEachDatabase('the agent API: step update idempotency and coloured section headers', (ctx) => {
  const runningJob = async (configuration: string) => {
    const s = await givenBuildAndAgent(ctx(), configuration);
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token)).expect(200)).body.job as { id: string };
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(s.agent.token)).expect(200);
    await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(s.agent.token)).expect(200);
    return { ...s, jobId: job.id };
  };

  it('applies a step update sent again with the same idempotency_uuid once', async () => {
    const s = await runningJob('steps:\n  - label: Tests\n    key: tests\n    command: make\n');
    const update = (idempotency_uuid: string | undefined, value: string) =>
      ctx().http().put('/v3/steps/tests').set(agentAuth(s.agent.token)).send({ idempotency_uuid, attribute: 'label', value, append: true });
    const label = async () =>
      (await ctx().http().post('/v3/steps/tests/export').set(agentAuth(s.agent.token)).send({ attribute: 'label' }).expect(200)).body.output;

    const uuid = '7d1c8f2e-3b4a-4c5d-9e6f-0a1b2c3d4e5f';
    await update(uuid, ' (1)').expect(204);
    // The agent's retry (the answer was lost): the same uuid, answered alike, appended once.
    await update(uuid, ' (1)').expect(204);
    await update(uuid, ' (1)').expect(204);
    expect(await label()).toBe('Tests (1)');
    // Another uuid is another update.
    await update('another-update', ' (2)').expect(204);
    expect(await label()).toBe('Tests (1) (2)');
    // Without a uuid nothing is remembered: each one applies.
    await update(undefined, '!').expect(204);
    await update(undefined, '!').expect(204);
    expect(await label()).toBe('Tests (1) (2)!!');
    const build = (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body;
    expect(build.jobs[0].name).toBe('Tests (1) (2)!!');
    expect(Number((await ctx().services.db('step_updates').where({ build_id: s.build.id }).count({ n: '*' }))[0]!.n)).toBe(2);

    // A refused update (too long) leaves its uuid unused: the corrected one with it applies.
    const refused = await update('fix-me', 'x'.repeat(255));
    expect(refused.status).toBe(422);
    await ctx()
      .http()
      .put('/v3/steps/tests')
      .set(agentAuth(s.agent.token))
      .send({ idempotency_uuid: 'fix-me', attribute: 'label', value: 'Renamed' })
      .expect(204);
    expect(await label()).toBe('Renamed');
  });

  it('has a step_updates migration that goes down and up again with builds in place', async () => {
    const s = await runningJob('steps:\n  - label: Tests\n    key: tests\n    command: make\n');
    const update = (idempotency_uuid: string) =>
      ctx().http().put('/v3/steps/tests').set(agentAuth(s.agent.token)).send({ idempotency_uuid, attribute: 'label', value: '+', append: true });
    await update('before').expect(204);
    const db = ctx().services.db;
    await stepUpdates.down(db);
    expect(await db.schema.hasTable('step_updates')).toBe(false);
    await stepUpdates.up(db);
    await update('after').expect(204);
    await update('after').expect(204);
    expect(existing(await db('jobs').where({ id: s.jobId }).first(), 'the job').name).toBe('Tests++');
  });

  it('gives coloured section headers their times as plain ones, from the chunks that carry them', async () => {
    const s = await runningJob('steps:\n  - command: make\n');
    const chunks = [
      '\u001b[0m~~~ Preparing working directory\n$ cd /tmp\n',
      '\u001b[32m--- Running tests\u001b[0m\nok\n\u001b[32mcolour --- not a header\n',
      '\u001b[1;31m+++ Failures\u001b[0m\n--- plain\n\u001b[32m---nospace\n',
    ];
    let offset = 0;
    for (const [i, content] of chunks.entries()) {
      await ctx()
        .http()
        .post(`/v3/jobs/${s.jobId}/chunks`)
        .set(agentAuth(s.agent.token))
        .send({ sequence: i + 1, offset, content })
        .expect(201);
      offset += Buffer.byteLength(content);
    }
    const log = (await ctx().http().get(`${s.url}/jobs/${s.jobId}/log`).set(auth(s.token)).expect(200)).body;
    expect(log.content).toBe(chunks.join(''));
    expect(log.header_times).toHaveLength(4);
    expect(log.header_times.every((t: unknown) => Number.isInteger(t) && (t as number) > 0)).toBe(true);
  });
});
