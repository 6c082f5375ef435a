/** Shared by the upload tests: a suite with its API token, and results in the collectors' shape. */
import crypto from 'node:crypto';
import { auth, type TestContext } from '../support/context';

export interface SuiteFixture {
  org: { id: string; slug: string };
  token: string;
  suite: { id: string; slug: string };
  apiToken: string;
  base: string;
}

export async function givenSuite(ctx: TestContext, name = 'My Suite'): Promise<SuiteFixture> {
  const { org, token } = await ctx.givenAdmin();
  const res = await ctx.http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name, show_api_token: true });
  if (res.status !== 201) throw new Error(`suite create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { org, token, suite: res.body, apiToken: res.body.api_token, base: `/v2/analytics/organizations/${org.slug}/suites/${res.body.slug}` };
}

export const suiteAuth = (apiToken: string) => ({ Authorization: `Token token="${apiToken}"` });

export function result(name: string, outcome: string, extra: Record<string, unknown> = {}) {
  return {
    id: crypto.randomUUID(),
    scope: 'User#email',
    name,
    location: `./spec/models/user_spec.rb:${name.length}`,
    file_name: './spec/models/user_spec.rb',
    result: outcome,
    ...(outcome === 'failed'
      ? { failure_reason: 'expected true, got false', failure_expanded: [{ expanded: ['expected true', 'got false'], backtrace: ['user_spec.rb:42'] }] }
      : {}),
    history: { section: 'top', start_at: 1.5, end_at: 1.75, duration: 0.25 },
    ...extra,
  };
}

export function upload(runEnv: Record<string, unknown>, data: unknown[], tags: Record<string, string> = {}) {
  return { format: 'json', run_env: { ci: 'generic', ...runEnv }, tags, data };
}

/** Uploads results to the suite as its collector would: the run's id (anything but 202 throws, saying what came back). */
export async function postUpload(ctx: TestContext, s: SuiteFixture, body: object): Promise<{ run_id: string }> {
  const res = await ctx.http().post('/v1/uploads').set(suiteAuth(s.apiToken)).send(body);
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
  return { run_id: String(res.body.run_id) };
}
