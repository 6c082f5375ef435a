/** A finished build's event as the outbox hands it to a provider: the REST shapes, trimmed. */
import type { EventName, NotificationEvent } from '../../src/notifications/events';

export const BUILD_ID = '0190f7a0-1111-7000-8000-000000000001';

export function scriptJob(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    graphql_id: Buffer.from(`Job---${id}`).toString('base64'),
    type: 'script',
    name: ':jest: Tests',
    label: ':jest: Tests',
    step_key: 'tests',
    step: { id: `step-${id}`, signature: null },
    state: 'passed',
    command: 'npm test',
    agent_query_rules: ['queue=linux'],
    exit_status: 0,
    soft_failed: false,
    created_at: '2026-01-02T10:00:00.000Z',
    scheduled_at: '2026-01-02T10:00:00.000Z',
    runnable_at: '2026-01-02T10:00:01.000Z',
    started_at: '2026-01-02T10:00:03.000Z',
    finished_at: '2026-01-02T10:01:03.000Z',
    agent: { id: 'agent-1', name: 'builder-1', meta_data: ['queue=linux', 'os=linux'] },
    group_key: null,
    retried_in_job_id: null,
    signal_reason: null,
    matrix: null,
    ...extra,
  };
}

export function buildRepresentation(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: BUILD_ID,
    graphql_id: Buffer.from(`Build---${BUILD_ID}`).toString('base64'),
    url: 'http://windsock.test/v2/organizations/acme/pipelines/web/builds/42',
    web_url: 'http://windsock.test/acme/web/builds/42',
    number: 42,
    state: 'passed',
    blocked: false,
    message: 'Fix <the> build & ship',
    commit: 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0',
    branch: 'main',
    source: 'api',
    creator: { id: 'user-1', graphql_id: 'VXNlci0tLXVzZXItMQ==', name: 'Keith Pitt', email: 'keith@example.com' },
    created_at: '2026-01-02T09:59:58.000Z',
    scheduled_at: '2026-01-02T09:59:58.000Z',
    started_at: '2026-01-02T10:00:00.000Z',
    finished_at: '2026-01-02T10:02:00.000Z',
    jobs: [
      scriptJob('job-1'),
      scriptJob('job-2', {
        step_key: 'lint',
        name: 'Lint',
        label: 'Lint',
        step: { id: 'step-lint', signature: null },
        state: 'failed',
        exit_status: 2,
        started_at: '2026-01-02T10:00:05.000Z',
        finished_at: '2026-01-02T10:00:35.000Z',
      }),
      { id: 'wait-1', type: 'waiter', state: 'passed', step_key: null },
      scriptJob('job-3', { state: 'skipped', started_at: null, finished_at: null, agent: null }),
    ],
    pipeline: {
      id: 'pipeline-1',
      graphql_id: 'UGlwZWxpbmUtLS1waXBlbGluZS0x',
      slug: 'web',
      name: 'Web',
      repository: 'git@example.com:acme/web.git',
      web_url: 'http://windsock.test/acme/web',
    },
    ...extra,
  };
}

export function buildEvent(name: EventName = 'build.finished', build: Record<string, unknown> = buildRepresentation()): NotificationEvent {
  return {
    id: 'outbox-1',
    name,
    occurredAt: new Date('2026-01-02T10:02:01.000Z'),
    organizationId: 'org-1',
    pipelineId: 'pipeline-1',
    buildId: String(build.id),
    payload: {
      event: name,
      build,
      pipeline: build.pipeline as Record<string, unknown>,
      sender: { id: 'user-1', name: 'Keith Pitt' },
    },
  };
}
