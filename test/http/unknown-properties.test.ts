/**
 * Request bodies of the REST API take properties they don't know and ignore them, as the real API
 * does (docs/decisions.md, "Isolation, scopes, mass assignment, secrets"): a client that sends a
 * field a newer API version added, or one Windsock lacks, is not refused for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { auth, describeEachDatabase } from '../support/context';
import { givenSteppedBuild } from '../support/agents';

type Json = Record<string, unknown>;
const doc = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.yaml'), 'utf8')) as Json;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** The component a `$ref` names. */
const component = (ref: string): Json => obj(obj(obj(doc.components).schemas)[ref.replace('#/components/schemas/', '')]);

describe('REST request bodies', () => {
  it('are open: no /v2 operation refuses properties it does not know', () => {
    const closed = Object.entries(obj(doc.paths))
      .filter(([p]) => p.startsWith('/v2/'))
      .flatMap(([p, item]) =>
        Object.entries(obj(item)).flatMap(([method, op]) =>
          Object.values(obj(obj(obj(op).requestBody).content)).flatMap((media) => {
            const ref = obj(obj(media).schema).$ref;
            return typeof ref === 'string' && component(ref).additionalProperties === false ? [`${method.toUpperCase()} ${p}: ${ref}`] : [];
          }),
        ),
      );
    expect(closed).toEqual([]);
  });
});

describeEachDatabase('REST request bodies with properties Windsock does not know', (ctx) => {
  it('are answered as without them: unblock, reprioritize, retry failed jobs', async () => {
    const s = await givenSteppedBuild(ctx(), 'steps:\n  - block: Go?\n  - command: make\n');
    const block = (await s.read()).jobs[0]!;
    await ctx().http().put(`${s.url}/jobs/${block.id}/unblock`).set(auth(s.token)).send({ fields: {}, comment: 'from a newer client' }).expect(200);
    const job = (await s.read()).jobs[1]!;
    const prioritized = await ctx().http().put(`${s.url}/jobs/${job.id}/reprioritize`).set(auth(s.token)).send({ priority: 5, reason: 'urgent' }).expect(200);
    expect(prioritized.body.priority).toEqual({ number: 5 });
    await s.run(1);
    const retried = await ctx().http().put(`${s.url}/retry_failed_jobs`).set(auth(s.token)).send({ states: 'failed', force: true }).expect(202);
    expect(retried.body.retried_jobs_count).toBe(1);
  });
});
