/**
 * The audit log covers every admin action (issue 30): each action below, taken through the REST
 * API, leaves exactly one new event of its type, naming its subject and the caller who took it;
 * a refused change (422) leaves none; no secret (a cluster secret's value, an agent token, a
 * pipeline's webhook secret) is ever in one.
 */
import type { Organization } from '../../src/core/identity';
import { auth, describeEachDatabase, type TestContext } from '../support/context';

interface AuditEventBody {
  uuid: string;
  type: string;
  actor: { type: string; uuid: string } | null;
  subject: { type: string; uuid: string; name: string | null };
  data: Record<string, unknown>;
}

interface Env {
  ctx: TestContext;
  org: Organization;
  base: string;
  token: string;
  /** POST/PUT/PATCH/DELETE `path` (under the organization) with `body`, expecting `status`; the answer's body. */
  send(method: 'post' | 'put' | 'patch' | 'delete', path: string, status: number, body?: unknown): Promise<Record<string, unknown>>;
}

const YAML = 'steps:\n  - command: "make test"\n';
const suffix = () => Math.random().toString(36).slice(2, 8);

const cluster = async (env: Env) => (await env.send('post', '/clusters', 201, { name: `Cluster ${suffix()}` })).id as string;
const queue = async (env: Env, clusterId: string) => (await env.send('post', `/clusters/${clusterId}/queues`, 201, { key: `q-${suffix()}` })).id as string;
const pipeline = async (env: Env) =>
  (await env.send('post', '/pipelines', 201, { name: `Pipeline ${suffix()}`, repository: 'git@github.com:acme-inc/app.git', configuration: YAML })) as {
    id: string;
    slug: string;
  };

const template = async (env: Env) => (await env.send('post', '/pipeline-templates', 201, { name: `Template ${suffix()}`, configuration: YAML })).uuid as string;
const schedule = async (env: Env, slug: string) =>
  (await env.send('post', `/pipelines/${slug}/schedules`, 201, { label: 'Nightly', cronline: '@midnight', env: { DEPLOY_TOKEN: SECRET_VALUE } })).id as string;

const service = async (env: Env) =>
  (
    await env.send('post', '/services', 201, {
      provider: 'webhook',
      description: 'Deploys',
      settings: { url: 'https://hooks.example.com/deploys', token: SECRET_VALUE },
    })
  ).id as string;
/** Test suites live under the analytics paths. */
const analytics = (env: Env) => `/v2/analytics/organizations/${env.org.slug}/suites`;
const suite = async (env: Env) => {
  const created = await env.send('post', analytics(env), 201, { name: `Suite ${suffix()}`, show_api_token: true });
  ACTIONS_SECRETS.push(created.api_token as string);
  return created as { id: string; slug: string };
};

interface Action {
  action: string;
  type: string;
  subject: string;
  /** Takes the action (after any set-up of its own); the subject's id. */
  act(env: Env): Promise<string>;
  /** What must not be in the log. */
  secrets?: string[];
}

const SECRET_VALUE = 'sup3r-s3cret-value';

const ACTIONS: Action[] = [
  { action: 'create a cluster', type: 'ClusterCreatedEvent', subject: 'Cluster', act: cluster },
  {
    action: 'update a cluster',
    type: 'ClusterUpdatedEvent',
    subject: 'Cluster',
    act: async (env) => {
      const id = await cluster(env);
      await env.send('patch', `/clusters/${id}`, 200, { description: 'Changed' });
      return id;
    },
  },
  {
    action: 'delete a cluster',
    type: 'ClusterDeletedEvent',
    subject: 'Cluster',
    act: async (env) => {
      const id = await cluster(env);
      await env.send('delete', `/clusters/${id}`, 204);
      return id;
    },
  },
  { action: 'create a cluster queue', type: 'ClusterQueueCreatedEvent', subject: 'ClusterQueue', act: async (env) => queue(env, await cluster(env)) },
  {
    action: 'update a cluster queue',
    type: 'ClusterQueueUpdatedEvent',
    subject: 'ClusterQueue',
    act: async (env) => {
      const c = await cluster(env);
      const id = await queue(env, c);
      await env.send('patch', `/clusters/${c}/queues/${id}`, 200, { description: 'Changed' });
      return id;
    },
  },
  {
    action: 'delete a cluster queue',
    type: 'ClusterQueueDeletedEvent',
    subject: 'ClusterQueue',
    act: async (env) => {
      const c = await cluster(env);
      const id = await queue(env, c);
      await env.send('delete', `/clusters/${c}/queues/${id}`, 204);
      return id;
    },
  },
  {
    action: "pause a cluster queue's dispatch",
    type: 'ClusterQueueDispatchPausedEvent',
    subject: 'ClusterQueue',
    act: async (env) => {
      const c = await cluster(env);
      const id = await queue(env, c);
      await env.send('post', `/clusters/${c}/queues/${id}/pause_dispatch`, 200, { note: 'Maintenance' });
      return id;
    },
  },
  {
    action: "resume a cluster queue's dispatch",
    type: 'ClusterQueueDispatchResumedEvent',
    subject: 'ClusterQueue',
    act: async (env) => {
      const c = await cluster(env);
      const id = await queue(env, c);
      await env.ctx.http().post(`${env.base}/clusters/${c}/queues/${id}/pause_dispatch`).set(auth(env.token)).send({}).expect(200);
      await env.send('post', `/clusters/${c}/queues/${id}/resume_dispatch`, 200, {});
      return id;
    },
  },
  {
    action: 'create a cluster agent token',
    type: 'ClusterTokenCreatedEvent',
    subject: 'ClusterToken',
    act: async (env) => {
      const c = await cluster(env);
      const created = await env.send('post', `/clusters/${c}/tokens`, 201, { description: 'Linux agents' });
      ACTIONS_SECRETS.push(created.token as string);
      return created.id as string;
    },
  },
  {
    action: 'update a cluster agent token',
    type: 'ClusterTokenUpdatedEvent',
    subject: 'ClusterToken',
    act: async (env) => {
      const c = await cluster(env);
      const id = (await env.send('post', `/clusters/${c}/tokens`, 201, { description: 'Linux agents' })).id as string;
      await env.send('patch', `/clusters/${c}/tokens/${id}`, 200, { description: 'Mac agents' });
      return id;
    },
  },
  {
    action: 'revoke a cluster agent token',
    type: 'ClusterTokenDeletedEvent',
    subject: 'ClusterToken',
    act: async (env) => {
      const c = await cluster(env);
      const id = (await env.send('post', `/clusters/${c}/tokens`, 201, { description: 'Linux agents' })).id as string;
      await env.send('delete', `/clusters/${c}/tokens/${id}`, 204);
      return id;
    },
  },
  {
    action: 'create a cluster secret',
    type: 'SecretCreatedEvent',
    subject: 'Secret',
    secrets: [SECRET_VALUE],
    act: async (env) => {
      const c = await cluster(env);
      return (await env.send('post', `/clusters/${c}/secrets`, 201, { key: 'DEPLOY_KEY', value: SECRET_VALUE })).id as string;
    },
  },
  {
    action: 'update a cluster secret',
    type: 'SecretUpdatedEvent',
    subject: 'Secret',
    act: async (env) => {
      const c = await cluster(env);
      const id = (await env.send('post', `/clusters/${c}/secrets`, 201, { key: 'DEPLOY_KEY', value: 'first-value' })).id as string;
      await env.send('put', `/clusters/${c}/secrets/${id}`, 200, { description: 'For deploys' });
      return id;
    },
  },
  {
    action: "update a cluster secret's value",
    type: 'SecretUpdatedEvent',
    subject: 'Secret',
    secrets: [SECRET_VALUE],
    act: async (env) => {
      const c = await cluster(env);
      const id = (await env.send('post', `/clusters/${c}/secrets`, 201, { key: 'DEPLOY_KEY', value: 'first-value' })).id as string;
      await env.send('put', `/clusters/${c}/secrets/${id}/value`, 200, { value: SECRET_VALUE });
      return id;
    },
  },
  {
    action: 'delete a cluster secret',
    type: 'SecretDeletedEvent',
    subject: 'Secret',
    act: async (env) => {
      const c = await cluster(env);
      const id = (await env.send('post', `/clusters/${c}/secrets`, 201, { key: 'DEPLOY_KEY', value: 'first-value' })).id as string;
      await env.send('delete', `/clusters/${c}/secrets/${id}`, 204);
      return id;
    },
  },
  {
    action: 'add a cluster maintainer',
    type: 'ClusterPermissionCreatedEvent',
    subject: 'ClusterMaintainer',
    act: async (env) => {
      const c = await cluster(env);
      const user = await env.ctx.givenUser(env.org, 'member');
      return (await env.send('post', `/clusters/${c}/maintainers`, 201, { user: user.id })).id as string;
    },
  },
  {
    action: 'remove a cluster maintainer',
    type: 'ClusterPermissionDeletedEvent',
    subject: 'ClusterMaintainer',
    act: async (env) => {
      const c = await cluster(env);
      const user = await env.ctx.givenUser(env.org, 'member');
      const id = (await env.send('post', `/clusters/${c}/maintainers`, 201, { user: user.id })).id as string;
      await env.send('delete', `/clusters/${c}/maintainers/${id}`, 204);
      return id;
    },
  },
  { action: 'create a pipeline', type: 'PipelineCreatedEvent', subject: 'Pipeline', act: async (env) => (await pipeline(env)).id },
  {
    action: 'update a pipeline',
    type: 'PipelineUpdatedEvent',
    subject: 'Pipeline',
    act: async (env) => {
      const p = await pipeline(env);
      await env.send('patch', `/pipelines/${p.slug}`, 200, { description: 'Changed' });
      return p.id;
    },
  },
  {
    action: 'delete a pipeline',
    type: 'PipelineDeletedEvent',
    subject: 'Pipeline',
    act: async (env) => {
      const p = await pipeline(env);
      await env.send('delete', `/pipelines/${p.slug}`, 204);
      return p.id;
    },
  },
  {
    action: 'archive a pipeline',
    type: 'PipelineArchivedEvent',
    subject: 'Pipeline',
    act: async (env) => {
      const p = await pipeline(env);
      await env.send('post', `/pipelines/${p.slug}/archive`, 200);
      return p.id;
    },
  },
  {
    action: 'unarchive a pipeline',
    type: 'PipelineUnarchivedEvent',
    subject: 'Pipeline',
    act: async (env) => {
      const p = await pipeline(env);
      await env.ctx.http().post(`${env.base}/pipelines/${p.slug}/archive`).set(auth(env.token)).expect(200);
      await env.send('post', `/pipelines/${p.slug}/unarchive`, 200);
      return p.id;
    },
  },
  {
    action: "rotate a pipeline's webhook secret",
    type: 'PipelineWebhookSecretRotatedEvent',
    subject: 'Pipeline',
    act: async (env) => {
      const p = await pipeline(env);
      const rotated = await env.send('post', `/pipelines/${p.slug}/webhook-secret/rotate`, 200);
      ACTIONS_SECRETS.push(...Object.values(rotated).filter((v): v is string => typeof v === 'string' && v.length >= 32));
      return p.id;
    },
  },
  { action: 'create a pipeline template', type: 'PipelineTemplateCreatedEvent', subject: 'PipelineTemplate', act: template },
  {
    action: 'update a pipeline template',
    type: 'PipelineTemplateUpdatedEvent',
    subject: 'PipelineTemplate',
    act: async (env) => {
      const id = await template(env);
      await env.send('patch', `/pipeline-templates/${id}`, 200, { description: 'Changed', configuration: 'steps:\n  - command: "make lint"\n' });
      return id;
    },
  },
  {
    action: 'delete a pipeline template',
    type: 'PipelineTemplateDeletedEvent',
    subject: 'PipelineTemplate',
    act: async (env) => {
      const id = await template(env);
      await env.send('delete', `/pipeline-templates/${id}`, 204);
      return id;
    },
  },
  {
    action: 'create a pipeline schedule',
    type: 'PipelineScheduleCreatedEvent',
    subject: 'PipelineSchedule',
    secrets: [SECRET_VALUE],
    act: async (env) => schedule(env, (await pipeline(env)).slug),
  },
  {
    action: 'update a pipeline schedule',
    type: 'PipelineScheduleUpdatedEvent',
    subject: 'PipelineSchedule',
    act: async (env) => {
      const slug = (await pipeline(env)).slug;
      const id = await schedule(env, slug);
      await env.send('patch', `/pipelines/${slug}/schedules/${id}`, 200, { cronline: '@daily', enabled: false });
      return id;
    },
  },
  {
    action: 'delete a pipeline schedule',
    type: 'PipelineScheduleDeletedEvent',
    subject: 'PipelineSchedule',
    act: async (env) => {
      const slug = (await pipeline(env)).slug;
      const id = await schedule(env, slug);
      await env.send('delete', `/pipelines/${slug}/schedules/${id}`, 204);
      return id;
    },
  },
  {
    action: 'create a notification service',
    type: 'NotificationServiceCreatedEvent',
    subject: 'NotificationService',
    secrets: [SECRET_VALUE],
    act: service,
  },
  {
    action: 'update a notification service',
    type: 'NotificationServiceUpdatedEvent',
    subject: 'NotificationService',
    secrets: [SECRET_VALUE, 'n3w-s3cret'],
    act: async (env) => {
      const id = await service(env);
      await env.send('patch', `/services/${id}`, 200, { description: 'Changed', settings: { url: 'https://hooks.example.com/other', token: 'n3w-s3cret' } });
      return id;
    },
  },
  {
    action: 'delete a notification service',
    type: 'NotificationServiceDeletedEvent',
    subject: 'NotificationService',
    act: async (env) => {
      const id = await service(env);
      await env.send('delete', `/services/${id}`, 204);
      return id;
    },
  },
  {
    action: 'disable a notification service',
    type: 'NotificationServiceDisabledEvent',
    subject: 'NotificationService',
    act: async (env) => {
      const id = await service(env);
      await env.send('put', `/services/${id}/disable`, 200);
      return id;
    },
  },
  {
    action: 'enable a notification service',
    type: 'NotificationServiceEnabledEvent',
    subject: 'NotificationService',
    act: async (env) => {
      const id = await service(env);
      await env.ctx.http().put(`${env.base}/services/${id}/disable`).set(auth(env.token)).expect(200);
      await env.send('put', `/services/${id}/enable`, 200);
      return id;
    },
  },
  {
    action: 'create an agent registration token',
    type: 'AgentTokenCreatedEvent',
    subject: 'AgentToken',
    act: async (env) => {
      const created = await env.send('post', '/agent-tokens', 201, { description: 'CI fleet' });
      ACTIONS_SECRETS.push(created.token as string);
      return created.id as string;
    },
  },
  { action: 'create a test suite', type: 'SuiteCreatedEvent', subject: 'Suite', act: async (env) => (await suite(env)).id },
  {
    action: 'update a test suite',
    type: 'SuiteUpdatedEvent',
    subject: 'Suite',
    act: async (env) => {
      const s = await suite(env);
      await env.send('patch', `${analytics(env)}/${s.slug}`, 200, { default_branch: 'trunk' });
      return s.id;
    },
  },
  {
    action: 'delete a test suite',
    type: 'SuiteDeletedEvent',
    subject: 'Suite',
    act: async (env) => {
      const s = await suite(env);
      await env.send('delete', `${analytics(env)}/${s.slug}`, 204);
      return s.id;
    },
  },
];

/** Secrets an action was answered with (a token, a webhook secret): none may be in the log. */
const ACTIONS_SECRETS: string[] = [];

describeEachDatabase('audit events of admin actions', (ctx) => {
  async function env(): Promise<Env & { userId: string }> {
    const { org, user, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}`;
    return {
      ctx: ctx(),
      org,
      base,
      token,
      userId: user.id,
      async send(method, path, status, body) {
        // A path under the organization, or (the analytics paths) a whole one.
        const req = ctx()
          .http()
          [method](path.startsWith('/v2/') ? path : `${base}${path}`)
          .set(auth(token));
        const res = await (body === undefined ? req : req.send(body as object));
        if (res.status !== status) throw new Error(`${method.toUpperCase()} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body as Record<string, unknown>;
      },
    };
  }

  async function log(e: Env): Promise<AuditEventBody[]> {
    const res = await e.ctx.http().get(`${e.base}/audit_events?per_page=100`).set(auth(e.token)).expect(200);
    return res.body.items as AuditEventBody[];
  }

  it.each(ACTIONS.map((a) => [a.action, a] as const))('%s: exactly one event, of its type, subject and actor', async (_, a) => {
    const e = await env();
    ACTIONS_SECRETS.length = 0;
    // The set-up an action needs records events of its own (of other types): the action's is the one of its type on its subject.
    const subjectId = await a.act(e);
    const events = (await log(e)).filter((ev) => ev.type === a.type && ev.subject.uuid === subjectId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: a.type, subject: { type: a.subject, uuid: subjectId }, actor: { type: 'User', uuid: e.userId } });
    const text = JSON.stringify(await log(e));
    for (const secret of [...(a.secrets ?? []), ...ACTIONS_SECRETS]) expect(text).not.toContain(secret);
  });

  it('records nothing for a refused change (422), whether refused before the change or inside its transaction', async () => {
    const e = await env();
    const c = await cluster(e);
    const q = await queue(e, c);
    await e.send('post', `/clusters/${c}/queues/${q}/pause_dispatch`, 200, {});
    const p = await pipeline(e);
    const before = await log(e);
    await e.send('post', '/clusters', 422, { name: ' ' });
    await e.send('patch', `/clusters/${c}`, 422, { default_queue_id: '00000000-0000-4000-8000-000000000000' });
    await e.send('post', `/clusters/${c}/queues`, 422, { key: (await e.send('post', `/clusters/${c}/queues`, 201, { key: 'dup' })).key });
    // Refused inside the transaction (it is already paused): the record goes with the rollback.
    await e.send('post', `/clusters/${c}/queues/${q}/pause_dispatch`, 422, {});
    await e.send('post', `/clusters/${c}/secrets`, 422, { key: 'bk_reserved', value: 'x' });
    await e.send('post', `/clusters/${c}/tokens`, 422, { description: ' ' });
    await e.send('post', '/pipelines', 422, { name: '', repository: 'git@github.com:acme-inc/app.git', configuration: YAML });
    await e.send('patch', `/pipelines/${p.slug}`, 422, { name: ' ' });
    await e.send('post', `/pipelines/${p.slug}/unarchive`, 422);
    await e.send('post', '/pipeline-templates', 422, { name: ' ', configuration: YAML });
    await e.send('post', `/pipelines/${p.slug}/schedules`, 422, { cronline: 'not a cronline' });
    await e.send('post', '/services', 422, { provider: 'webhook', description: 'x', settings: { url: 'not a url', token: SECRET_VALUE } });
    await e.send('post', analytics(e), 422, { name: ' ' });
    const after = await log(e);
    // Only the queue made to provoke the duplicate was recorded.
    expect(after.filter((ev) => !before.some((b) => b.uuid === ev.uuid)).map((ev) => ev.type)).toEqual(['ClusterQueueCreatedEvent']);
  });
});
