/**
 * What the tests of the SDKs in other languages share: a Windsock listening on 127.0.0.1 (port
 * 0) whose links and `Link` headers name its own address, so a client can follow them; an
 * organization with data for the four calls every SDK makes (pipelines, builds on several pages,
 * a suite with a flaky test); and a way to run a client program and read the JSON it prints.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import { promisify } from 'node:util';
import { createTestContext, auth, type ContextOptions, type TestContext } from '../support/context';
import { listen, stop } from '../support/agents';
import { toolEnv } from '../support/tools';
import { givenBuild, givenPipeline } from '../support/given';
import { result, suiteAuth, upload } from '../uploads/helpers';
import type { DatabaseKind } from '../../src/db/knex';

export interface LiveWindsock {
  ctx: TestContext;
  url: string;
  close(): Promise<void>;
}

/** A context served on loopback, with `publicUrl` its own address. */
export async function liveWindsock(kind: DatabaseKind, opts: ContextOptions = {}, onResponse?: (res: http.ServerResponse) => void): Promise<LiveWindsock> {
  // Listen first: the app's public URL is the port the listener got.
  const served: { app?: http.RequestListener } = {};
  const { server, endpoint } = await listen((req, res) => {
    if (onResponse) res.on('finish', () => onResponse(res));
    served.app!(req, res);
  });
  const ctx = await createTestContext(kind, { ...opts, publicUrl: endpoint });
  served.app = ctx.app as unknown as http.RequestListener;
  return {
    ctx,
    url: endpoint,
    close: async () => {
      await stop(server);
      await ctx.close();
    },
  };
}

export interface SdkData {
  org: string;
  token: string;
  /** The pipelines' slugs, oldest first (the list answers newest first). */
  pipelines: string[];
  /** The pipeline with builds: numbers 1-4 on `main`, 5 on `feature`. */
  pipeline: string;
  suite: string;
  /** The test that passed and failed on one commit. */
  flakyTest: string;
  /** A second organization of the token's, with nothing in it (rate-limit bursts go there). */
  otherOrg: string;
}

/**
 * An organization with three pipelines, the first with five builds (four on `main`), and a suite
 * where `User can log in` passed and then failed on commit `c1` (a flaky test) while `User can
 * sign up` passed twice (not flaky).
 */
export async function givenSdkData(ctx: TestContext): Promise<SdkData> {
  const { org, user } = await ctx.givenAdmin();
  const other = await ctx.givenOrg();
  await ctx.services.orgs.addMember(other.id, user.id, 'admin');
  const token = await ctx.givenToken(user, [org, other]);
  const pipelines: string[] = [];
  for (const name of ['Alpha', 'Bravo', 'Charlie']) pipelines.push((await givenPipeline(ctx, org.slug, token, { name })).slug);
  const pipeline = pipelines[0]!;
  for (const branch of ['main', 'main', 'main', 'main', 'feature']) await givenBuild(ctx, org.slug, pipeline, token, { branch });
  const suite = await ctx.http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Unit', show_api_token: true });
  if (suite.status !== 201) throw new Error(`suite: ${suite.status} ${JSON.stringify(suite.body)}`);
  const flakyTest = 'User can log in';
  for (const [key, outcome] of [
    ['r1', 'passed'],
    ['r2', 'failed'],
  ] as const) {
    const res = await ctx
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(suite.body.api_token))
      .send(upload({ key, branch: 'main', commit_sha: 'c1' }, [result(flakyTest, outcome), result('User can sign up', 'passed')]));
    if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return { org: org.slug, token, pipelines, pipeline, suite: suite.body.slug, flakyTest, otherOrg: other.slug };
}

/** Runs a client program with these variables (over PATH, HOME and the tools' own: PERL5LIB, GOPATH...) and parses the JSON it prints. */
export async function runJson<T>(file: string, args: string[], env: Record<string, string>): Promise<T> {
  try {
    const { stdout } = await promisify(execFile)(file, args, { env: { ...toolEnv(), ...env }, timeout: 90_000 });
    return JSON.parse(stdout) as T;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new Error(`${file} failed: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}

/** What every smoke program is told: where Windsock is, the data it works on, and two builds a page. */
export function smokeEnv(live: LiveWindsock, data: SdkData): Record<string, string> {
  return {
    WINDSOCK_URL: live.url,
    WINDSOCK_TOKEN: data.token,
    WINDSOCK_ORG: data.org,
    WINDSOCK_PIPELINE: data.pipeline,
    WINDSOCK_SUITE: data.suite,
    WINDSOCK_PER_PAGE: '2',
  };
}

/** The build a smoke program creates: the data's pipeline's sixth, on main, marked with the client's name ('Go' sets `FROM: go`). */
export function smokeBuild(live: LiveWindsock, data: SdkData, client: string) {
  const from = client.toLowerCase();
  return {
    number: 6,
    state: 'scheduled',
    branch: 'main',
    commit: 'HEAD',
    message: `Built by the ${client} client`,
    env: { FROM: from },
    meta_data: { client: from },
    url: `${live.url}/v2/organizations/${data.org}/pipelines/${data.pipeline}/builds/6`,
  };
}
