/** Pipelines to deliver to, real GitHub example payloads, and signed deliveries. */
import crypto from 'node:crypto';
import examples from '@octokit/webhooks-examples';
import { auth, type TestContext } from '../support/context';

export interface Target {
  org: { slug: string };
  token: string;
  pipeline: { id: string; slug: string; provider: { webhook_url: string; settings: Record<string, unknown> } };
  /** The path the provider posts to: `/deliver/<webhook token>`. */
  path: string;
  secret: string;
}

let seq = 0;

/** A pipeline (GitHub by default) with these provider settings and pipeline fields. */
export async function givenTarget(ctx: TestContext, settings: Record<string, unknown> = {}, fields: Record<string, unknown> = {}): Promise<Target> {
  const { org, token } = await ctx.givenAdmin();
  seq += 1;
  const res = await ctx
    .http()
    .post(`/v2/organizations/${org.slug}/pipelines`)
    .set(auth(token))
    .send({
      name: `Deliveries ${seq}`,
      repository: 'git@github.com:Codertocat/Hello-World.git',
      configuration: 'steps:\n  - command: make test\n',
      provider_settings: settings,
      ...fields,
    });
  if (res.status !== 201) throw new Error(`pipeline create failed: ${JSON.stringify(res.body)}`);
  const pipeline = res.body as Target['pipeline'];
  const url = new URL(pipeline.provider.webhook_url);
  return { org, token, pipeline, path: url.pathname, secret: ctx.services.pipelines.webhookSecret(pipeline.id, 0) };
}

type Example = Record<string, unknown> & { action?: string };

/** A fresh copy of a payload from @octokit/webhooks-examples, the first one `pick` accepts. */
export function example(event: string, pick: (e: Example) => boolean = () => true): Example {
  const definition = (examples as unknown as { name: string; examples: Example[] }[]).find((d) => d.name === event);
  const found = definition?.examples.find(pick);
  if (!found) throw new Error(`no ${event} example matches`);
  return structuredClone(found);
}

/** The branch push example (refs/heads/master, head commit 6113728...). */
export function branchPush(changes: (p: Example & { head_commit: { message: string; id: string } }) => void = () => {}): Example {
  const p = example('push', (e) => e.ref === 'refs/heads/master' && e.head_commit !== null) as Example & { head_commit: { message: string; id: string } };
  changes(p);
  return p;
}

export function pullRequest(action: string, changes: (p: PullRequestExample) => void = () => {}): Example {
  const p = example('pull_request', (e) => e.action === action) as PullRequestExample;
  changes(p);
  return p;
}

export interface PullRequestExample extends Example {
  number: number;
  pull_request: {
    draft: boolean;
    title: string;
    labels: { name: string }[];
    head: { ref: string; sha: string; repo: { full_name: string; clone_url: string; owner: { login: string } } | null };
    base: { ref: string; repo: { full_name: string } };
  };
}

/** Makes a pull request example come from a fork owned by `owner`. */
export function fromFork(p: PullRequestExample, owner = 'Octocoders'): void {
  const repo = p.pull_request.head.repo!;
  repo.full_name = `${owner}/Hello-World`;
  repo.owner.login = owner;
  repo.clone_url = `https://github.com/${owner}/Hello-World.git`;
}

/** `sha256=<hex>` as GitHub and Bitbucket sign: computed here with node:crypto, independently of the server's library. */
export function signatureOf(secret: string, body: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** POSTs a GitHub delivery, signed with the pipeline's webhook secret unless told otherwise. */
export function deliverGitHub(ctx: TestContext, t: Target, event: string, payload: unknown, opts: { signature?: string | null } = {}) {
  const body = JSON.stringify(payload);
  const req = ctx.http().post(t.path).set('Content-Type', 'application/json').set('X-GitHub-Event', event).set('X-GitHub-Delivery', `d-${++seq}`);
  const signature = opts.signature === undefined ? signatureOf(t.secret, body) : opts.signature;
  if (signature !== null) req.set('X-Hub-Signature-256', signature);
  return req.send(body);
}

/** The pipeline's builds, newest first, through the API. */
export async function buildsOf(ctx: TestContext, t: Target) {
  const res = await ctx.http().get(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/builds`).set(auth(t.token)).expect(200);
  return res.body as Record<string, unknown>[];
}
