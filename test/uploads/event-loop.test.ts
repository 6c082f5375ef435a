/**
 * Issue 13 item 4: a large upload is parsed and ingested without holding the event loop for
 * the whole of it. No timing here (BENCHMARKS.md has the figures): these count turns of the event
 * loop that happen while the work is in progress, which was zero before.
 */
import { RESULT_BATCH } from '../../src/uploads/event-loop';
import { INLINE_BYTES, parseUploadJson } from '../../src/uploads/json';
import { describeEachDatabase } from '../support/context';
import { givenSuite, result, suiteAuth, upload } from './helpers';

/** Counts turns of the event loop until the promise settles. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  const value = await work();
  done = true;
  return { value, turns };
}

const longFailure = (i: number) =>
  result(`test ${i}`, 'failed', { failure_expanded: [{ expanded: Array.from({ length: 4 }, (_, j) => `${j} ${'x'.repeat(100)}`), backtrace: [] }] });

describe('parseUploadJson', () => {
  it('parses text over INLINE_BYTES off the event loop, to the same value JSON.parse gives', async () => {
    const body = { format: 'json', run_env: { key: 'k' }, data: Array.from({ length: 3000 }, (_, i) => longFailure(i)) };
    const text = Buffer.from(JSON.stringify(body));
    expect(text.length).toBeGreaterThan(INLINE_BYTES);
    const { value, turns } = await turnsDuring(() => parseUploadJson(text));
    expect(value).toEqual({ ok: true, value: body, mayHoldNul: false });
    // At least one turn per batch of results sent back.
    expect(turns).toBeGreaterThanOrEqual(3000 / RESULT_BATCH);
  });

  it('hands a buffer that owns its memory to the worker instead of copying it, and copies a view into a larger one', async () => {
    const text = JSON.stringify(Array.from({ length: 2000 }, (_, i) => longFailure(i)));
    const owned = Buffer.from(text);
    expect(owned.byteLength).toBeGreaterThan(INLINE_BYTES);
    expect(await parseUploadJson(owned)).toMatchObject({ ok: true });
    expect(owned.byteLength).toBe(0);
    const shared = Buffer.from(`${text}    `);
    const view = shared.subarray(0, text.length);
    expect(await parseUploadJson(view)).toMatchObject({ ok: true });
    expect(view.toString()).toBe(text);
  });

  it('reports invalid JSON, too deep nesting and a possible NUL from the worker as from the inline parse', async () => {
    const pad = 'x'.repeat(INLINE_BYTES);
    for (const [text, expected] of [
      [`{"pad":"${pad}","data":[`, { ok: false, reason: expect.stringMatching(/JSON/) }],
      [`{"pad":"${pad}","data":${'['.repeat(101)}${']'.repeat(101)}}`, { ok: false, reason: 'nested deeper than 100 levels' }],
      [`["${pad}\\u0000"]`, { ok: true, value: [`${pad}\u0000`], mayHoldNul: true }],
      ['["\\u0000"]', { ok: true, value: ['\u0000'], mayHoldNul: true }],
    ] as const) {
      expect(await parseUploadJson(Buffer.from(text))).toEqual(expected);
    }
  });
});

describeEachDatabase('uploads and the event loop', (ctx) => {
  it('ingests a 5,000-result upload with turns of the event loop in between, and stores every result', async () => {
    const s = await givenSuite(ctx());
    const who = await ctx().services.uploads.authenticate(suiteAuth(s.apiToken).Authorization);
    const data = Array.from({ length: 5000 }, (_, i) => longFailure(i));
    const { value, turns } = await turnsDuring(() => ctx().services.uploads.uploadJson(who, upload({ key: 'turns', commit_sha: 'c1' }, data) as never));
    expect(value).toMatchObject({ queued: 5000, skipped: 0 });
    // Before: none at all on SQLite (each statement settles at once), the whole upload in one turn.
    expect(turns).toBeGreaterThanOrEqual(5000 / RESULT_BATCH);
    const [row] = await ctx().services.db('test_executions').where({ run_id: value.run_id }).count({ n: '*' });
    expect(Number(row!.n)).toBe(5000);
  });

  it('takes a JSON body and a multipart file over INLINE_BYTES, and finds NUL in them by field', async () => {
    const s = await givenSuite(ctx());
    const data = Array.from({ length: 3000 }, (_, i) => longFailure(i));
    const res = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .send(upload({ key: 'big-json' }, data))
      .expect(202);
    expect(res.body).toMatchObject({ queued: 3000, skipped: 0 });
    const file = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .field('format', 'json')
      .field('run_env[key]', 'big-file')
      .attach('data', Buffer.from(JSON.stringify(data)), 'r.json')
      .expect(202);
    expect(file.body).toMatchObject({ queued: 3000, skipped: 0 });
    data[2999] = { ...data[2999]!, name: 'nul \u0000 here' };
    const nul = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .send(upload({ key: 'big-nul' }, data))
      .expect(422);
    expect(nul.body.errors).toEqual([{ field: 'data[2999].name', code: 'must not contain the NUL character (U+0000)' }]);
    const nulFile = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .field('format', 'json')
      .field('run_env[key]', 'big-file-nul')
      .attach('data', Buffer.from(JSON.stringify(data)), 'r.json')
      .expect(422);
    expect(nulFile.body.errors).toEqual([{ field: 'data[2999].name', code: 'must not contain the NUL character (U+0000)' }]);
    const broken = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(upload({ key: 'big-broken' }, data)).slice(0, -2))
      .expect(400);
    expect(broken.body.message).toMatch(/^Problems parsing JSON: /);
  });
});
