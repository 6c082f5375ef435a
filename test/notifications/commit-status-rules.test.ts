/**
 * The rules of commit statuses: which statuses an event publishes, under which contexts, in
 * which state and words, for every provider setting that changes them.
 */
import type { EventName, NotificationEvent } from '../../src/notifications/events';
import {
  buildStatus,
  humanDuration,
  jobStatus,
  statusRepositoryPath,
  statusUpdatesFor,
  stepName,
  stepStatus,
  type StatusOptions,
  type StatusUpdate,
} from '../../src/notifications/commit-status';

const SHA = 'a'.repeat(40);
const WEB = 'https://windsock.example/acme/web-app/builds/12';

type Json = Record<string, unknown>;

function settings(over: Json = {}): Json {
  return {
    publish_commit_status: true,
    publish_commit_status_per_step: false,
    separate_pull_request_statuses: false,
    publish_blocked_as_pending: false,
    use_step_key_as_commit_status: false,
    repository: 'acme/web-app',
    ...over,
  };
}

function pipeline(over: Json = {}, provider = 'github', providerSettings: Json = settings()): Json {
  return { slug: 'web-app', repository: 'git@github.com:acme/web-app.git', provider: { id: provider, webhook_url: '', settings: providerSettings }, ...over };
}

function build(over: Json = {}): Json {
  return {
    id: 'b1',
    number: 12,
    state: 'passed',
    blocked: false,
    commit: SHA,
    branch: 'main',
    web_url: WEB,
    pull_request: null,
    started_at: '2026-11-26T01:00:00.000Z',
    finished_at: '2026-11-26T01:03:02.000Z',
    jobs: [],
    ...over,
  };
}

function job(over: Json = {}): Json {
  return {
    id: 'j1',
    type: 'script',
    name: ':rspec: RSpec',
    step_key: 'rspec',
    state: 'passed',
    web_url: `${WEB}#j1`,
    started_at: '2026-11-26T01:00:00.000Z',
    finished_at: '2026-11-26T01:00:45.000Z',
    soft_failed: false,
    parallel_group_index: null,
    parallel_group_total: null,
    ...over,
  };
}

function event(name: EventName, parts: { build?: Json; pipeline?: Json; job?: Json } = {}): NotificationEvent {
  return {
    id: 'e1',
    name,
    occurredAt: new Date('2026-11-26T01:03:02Z'),
    organizationId: 'o1',
    pipelineId: 'p1',
    buildId: 'b1',
    payload: { event: name, build: parts.build ?? build(), pipeline: parts.pipeline ?? pipeline(), ...(parts.job ? { job: parts.job } : {}), sender: null },
  };
}

const brief = (updates: StatusUpdate[]) => updates.map((u) => [u.context, u.state, u.description]);

describe('commit status rules: the build status', () => {
  it('publishes buildkite/<pipeline-slug> for the build, with the commit, repository, link and duration', () => {
    expect(statusUpdatesFor(event('build.finished'))).toEqual([
      {
        provider: 'github',
        repository: 'acme/web-app',
        sha: SHA,
        state: 'success',
        context: 'buildkite/web-app',
        description: 'Build #12 passed (3 minutes, 2 seconds)',
        targetUrl: WEB,
        subject: { kind: 'build', buildId: 'b1' },
      },
    ]);
  });

  it.each([
    ['creating', 'pending', 'Build #12 is scheduled'],
    ['scheduled', 'pending', 'Build #12 is scheduled'],
    ['running', 'running', 'Build #12 is running'],
    ['failing', 'running', 'Build #12 is failing'],
    ['canceling', 'running', 'Build #12 is canceling'],
    ['passed', 'success', 'Build #12 passed (3 minutes, 2 seconds)'],
    ['failed', 'failure', 'Build #12 failed (3 minutes, 2 seconds)'],
    ['canceled', 'canceled', 'Build #12 was canceled (3 minutes, 2 seconds)'],
    ['skipped', 'error', 'Build #12 was skipped'],
    ['not_run', 'error', 'Build #12 was not run'],
  ])('maps a %s build to %s', (state, expected, description) => {
    expect(brief(statusUpdatesFor(event('build.running', { build: build({ state }) })))).toEqual([['buildkite/web-app', expected, description]]);
  });

  it('leaves out the duration of a build that has not finished or never started', () => {
    expect(buildStatus(build({ state: 'passed', started_at: null }), false)?.description).toBe('Build #12 passed');
    expect(buildStatus(build({ state: 'failed', finished_at: 'garbage' }), false)?.description).toBe('Build #12 failed');
  });

  it('publishes nothing for a state it does not know', () => {
    expect(statusUpdatesFor(event('build.finished', { build: build({ state: 'exploded' }) }))).toEqual([]);
  });

  describe('blocked builds', () => {
    it.each([
      ['Windsock (passed, blocked: true)', { state: 'passed', blocked: true }],
      ['the real API (state: blocked)', { state: 'blocked', blocked: true }],
    ])('show as success by default: %s', (_name, over) => {
      expect(brief(statusUpdatesFor(event('build.finished', { build: build(over) })))).toEqual([
        ['buildkite/web-app', 'success', 'Build #12 passed and is blocked (3 minutes, 2 seconds)'],
      ]);
    });

    it('show as pending with publish_blocked_as_pending', () => {
      const p = pipeline({}, 'github', settings({ publish_blocked_as_pending: true }));
      expect(brief(statusUpdatesFor(event('build.finished', { build: build({ blocked: true }), pipeline: p })))).toEqual([
        ['buildkite/web-app', 'pending', 'Build #12 is blocked'],
      ]);
    });

    it('still fail when a job failed before the block', () => {
      const p = pipeline({}, 'github', settings({ publish_blocked_as_pending: true }));
      expect(statusUpdatesFor(event('build.finished', { build: build({ state: 'failed', blocked: true }), pipeline: p }))[0]?.state).toBe('failure');
    });
  });

  it('links to the build and says "Build" when the number is missing', () => {
    const [u] = statusUpdatesFor(event('build.running', { build: build({ state: 'running', number: undefined, web_url: undefined }) }));
    expect(u).toMatchObject({ description: 'Build is running', targetUrl: '' });
  });
});

describe('commit status rules: when nothing is published', () => {
  it('publish_commit_status off', () => {
    const p = pipeline({}, 'github', settings({ publish_commit_status: false, publish_commit_status_per_step: true }));
    expect(statusUpdatesFor(event('build.finished', { pipeline: p }))).toEqual([]);
    expect(statusUpdatesFor(event('job.finished', { pipeline: p, job: job() }))).toEqual([]);
  });

  it('publish_commit_status missing from the settings keeps its default (on)', () => {
    const s = settings();
    delete s.publish_commit_status;
    expect(statusUpdatesFor(event('build.finished', { pipeline: pipeline({}, 'github', s) }))).toHaveLength(1);
  });

  it.each(['HEAD', 'main', 'abc1234', `${'a'.repeat(39)}g`, '', undefined])('a commit that is not a full SHA: %p', (commit) => {
    expect(statusUpdatesFor(event('build.finished', { build: build({ commit }) }))).toEqual([]);
  });

  it('takes a SHA-256 commit and lowercases a SHA', () => {
    expect(statusUpdatesFor(event('build.finished', { build: build({ commit: 'b'.repeat(64) }) }))[0]?.sha).toBe('b'.repeat(64));
    expect(statusUpdatesFor(event('build.finished', { build: build({ commit: 'ABCDEF'.repeat(6) + 'ABCD' }) }))[0]?.sha).toBe('abcdef'.repeat(6) + 'abcd');
  });

  it.each(['git', 'gitlab_ee', 'bitbucket_server', 'beanstalk', null])('provider %p', (provider) => {
    expect(statusUpdatesFor(event('build.finished', { pipeline: pipeline({}, provider as string) }))).toEqual([]);
  });

  it('a provider the caller did not enable (no token configured)', () => {
    const opts: StatusOptions = { enabledProviders: ['gitlab', 'bitbucket'] };
    expect(statusUpdatesFor(event('build.finished'), opts)).toEqual([]);
    expect(statusUpdatesFor(event('build.finished'), { enabledProviders: ['github'] })).toHaveLength(1);
  });

  it.each(['ping', 'agent.connected', 'job.activated'] as EventName[])('%s without a command job', (name) => {
    expect(statusUpdatesFor(event(name, { pipeline: pipeline({}, 'github', settings({ publish_commit_status_per_step: true })) }))).toEqual([]);
  });

  it('a payload without its build or pipeline, or a repository with no owner/name', () => {
    const e = event('build.finished');
    expect(statusUpdatesFor({ ...e, payload: { event: 'build.finished', pipeline: pipeline(), sender: null } })).toEqual([]);
    expect(statusUpdatesFor({ ...e, payload: { event: 'build.finished', build: build(), sender: null } })).toEqual([]);
    const local = pipeline({ repository: '/srv/git/app' }, 'github', settings({ repository: undefined }));
    expect(statusUpdatesFor(event('build.finished', { pipeline: local }))).toEqual([]);
  });

  it("falls back to the provider settings' repository when the URL names none", () => {
    const p = pipeline({ repository: 'not a url' }, 'github', settings({ repository: 'acme/other' }));
    expect(statusUpdatesFor(event('build.finished', { pipeline: p }))[0]?.repository).toBe('acme/other');
  });
});

describe('commit status rules: a status per step', () => {
  const perStep = (over: Json = {}) => pipeline({}, 'github', settings({ publish_commit_status_per_step: true, ...over }));

  it('is off by default: job events publish nothing', () => {
    expect(statusUpdatesFor(event('job.finished', { job: job() }))).toEqual([]);
  });

  it('publishes buildkite/<slug>/<step label> for command jobs, linking to the job', () => {
    expect(statusUpdatesFor(event('job.finished', { pipeline: perStep(), job: job() }))).toEqual([
      {
        provider: 'github',
        repository: 'acme/web-app',
        sha: SHA,
        state: 'success',
        context: 'buildkite/web-app/:rspec: RSpec',
        description: ':rspec: RSpec passed (45 seconds)',
        targetUrl: `${WEB}#j1`,
        subject: { kind: 'job', buildId: 'b1', jobId: 'j1' },
      },
    ]);
  });

  it('uses the step key with use_step_key_as_commit_status, the label when the step has no key', () => {
    expect(statusUpdatesFor(event('job.finished', { pipeline: perStep({ use_step_key_as_commit_status: true }), job: job() }))[0]?.context).toBe(
      'buildkite/web-app/rspec',
    );
    expect(
      statusUpdatesFor(event('job.finished', { pipeline: perStep({ use_step_key_as_commit_status: true }), job: job({ step_key: null }) }))[0]?.context,
    ).toBe('buildkite/web-app/:rspec: RSpec');
  });

  it('names a step without a label by its key, then its id; a parallel job by its place', () => {
    expect(stepName(job({ name: null }), false)).toBe('rspec');
    expect(stepName(job({ name: '  ', step_key: null }), false)).toBe('j1');
    expect(stepName(job({ label: 'Label wins', name: 'name' }), false)).toBe('Label wins');
    expect(stepName(job({ parallel_group_index: 1, parallel_group_total: 3 }), false)).toBe(':rspec: RSpec (2/3)');
    expect(stepName(job({ parallel_group_index: 0, parallel_group_total: 1 }), false)).toBe(':rspec: RSpec');
  });

  it('publishes trigger jobs, not wait or block steps', () => {
    expect(statusUpdatesFor(event('job.finished', { pipeline: perStep(), job: job({ type: 'trigger', name: 'Deploy' }) }))).toHaveLength(1);
    expect(statusUpdatesFor(event('job.finished', { pipeline: perStep(), job: job({ type: 'waiter', name: null }) }))).toEqual([]);
    expect(statusUpdatesFor(event('job.activated', { pipeline: perStep(), job: job({ type: 'manual', state: 'unblocked' }) }))).toEqual([]);
  });

  it.each([
    ['pending', 'pending', ':rspec: RSpec is waiting'],
    ['waiting', 'pending', ':rspec: RSpec is waiting'],
    ['limited', 'pending', ':rspec: RSpec is waiting'],
    ['scheduled', 'pending', ':rspec: RSpec is scheduled'],
    ['assigned', 'pending', ':rspec: RSpec is scheduled'],
    ['accepted', 'pending', ':rspec: RSpec is scheduled'],
    ['running', 'running', ':rspec: RSpec is running'],
    ['canceling', 'running', ':rspec: RSpec is canceling'],
    ['timing_out', 'running', ':rspec: RSpec is timing out'],
    ['passed', 'success', ':rspec: RSpec passed (45 seconds)'],
    ['failed', 'failure', ':rspec: RSpec failed (45 seconds)'],
    ['timed_out', 'failure', ':rspec: RSpec timed out (45 seconds)'],
    ['expired', 'failure', ':rspec: RSpec expired before an agent took it'],
    ['canceled', 'canceled', ':rspec: RSpec was canceled (45 seconds)'],
    ['skipped', 'error', ':rspec: RSpec was skipped'],
    ['broken', 'error', ':rspec: RSpec was not run'],
    ['waiting_failed', 'error', ':rspec: RSpec was not run'],
  ])('maps a %s job to %s', (state, expected, description) => {
    expect(brief(statusUpdatesFor(event('job.started', { pipeline: perStep(), job: job({ state }) })))).toEqual([
      ['buildkite/web-app/:rspec: RSpec', expected, description],
    ]);
  });

  it('shows a soft failure as a success, and knows no unknown state', () => {
    expect(jobStatus(job({ state: 'failed', soft_failed: true }), 'Lint')).toEqual({ state: 'success', description: 'Lint soft failed (45 seconds)' });
    expect(jobStatus(job({ state: 'teleported' }), 'Lint')).toBeNull();
  });

  it("falls back to the build's link when the job has none", () => {
    expect(statusUpdatesFor(event('job.finished', { pipeline: perStep(), job: job({ web_url: undefined }) }))[0]?.targetUrl).toBe(WEB);
  });
});

describe('commit status rules: pull requests', () => {
  const pr = { id: '42', base: 'main', repository: 'https://github.com/acme/web-app.git' };

  it('share the branch context by default', () => {
    expect(statusUpdatesFor(event('build.finished', { build: build({ pull_request: pr }) }))[0]?.context).toBe('buildkite/web-app');
  });

  it('get buildkite/<slug>/pr (and .../pr/<step>) with separate_pull_request_statuses', () => {
    const p = pipeline({}, 'github', settings({ separate_pull_request_statuses: true, publish_commit_status_per_step: true }));
    expect(statusUpdatesFor(event('build.finished', { build: build({ pull_request: pr }), pipeline: p }))[0]?.context).toBe('buildkite/web-app/pr');
    expect(statusUpdatesFor(event('job.finished', { build: build({ pull_request: pr }), pipeline: p, job: job() }))[0]?.context).toBe(
      'buildkite/web-app/pr/:rspec: RSpec',
    );
    // A branch build of the same pipeline keeps the plain context.
    expect(statusUpdatesFor(event('build.finished', { pipeline: p }))[0]?.context).toBe('buildkite/web-app');
    expect(statusUpdatesFor(event('build.finished', { build: build({ pull_request: { id: '' } }), pipeline: p }))[0]?.context).toBe('buildkite/web-app');
  });
});

describe('commit status rules: notify github_commit_status', () => {
  const off = pipeline({}, 'github', settings({ publish_commit_status: false }));

  it('a build-level context publishes even with publish_commit_status off', () => {
    const opts = { buildNotify: [{ github_commit_status: { context: 'my-custom-status' } }, { slack: '#general' }] };
    expect(brief(statusUpdatesFor(event('build.finished', { pipeline: off }), opts))).toEqual([
      ['my-custom-status', 'success', 'Build #12 passed (3 minutes, 2 seconds)'],
    ]);
  });

  it('beside the default status when publish_commit_status is on, once per context', () => {
    const opts = {
      buildNotify: [
        { github_commit_status: { context: 'a' } },
        { github_commit_status: { context: 'a' } },
        { github_commit_status: { context: 'buildkite/web-app' } },
      ],
    };
    expect(statusUpdatesFor(event('build.finished'), opts).map((u) => u.context)).toEqual(['buildkite/web-app', 'a']);
  });

  it("takes the documentation's mis-indented example, and the default context when none is named", () => {
    const opts = { buildNotify: [{ github_commit_status: null, context: 'my-custom-status' }, { github_commit_status: {} }] };
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), opts).map((u) => u.context)).toEqual(['my-custom-status', 'buildkite/web-app']);
  });

  const finished = (...jobs: Json[]) => ({ state: 'finished' as const, jobs });

  it('a step-level context publishes at the step moment, without per-step statuses and beside them', () => {
    const opts = { stepNotify: [{ github_commit_status: { context: 'unit tests' } }], step: finished(job()) };
    expect(brief(statusUpdatesFor(event('job.finished', { pipeline: off, job: job() }), opts))).toEqual([
      ['unit tests', 'success', ':rspec: RSpec passed (45 seconds)'],
    ]);
    const both = pipeline({}, 'github', settings({ publish_commit_status_per_step: true }));
    expect(statusUpdatesFor(event('job.finished', { pipeline: both, job: job() }), opts).map((u) => u.context)).toEqual([
      'buildkite/web-app/:rspec: RSpec',
      'unit tests',
    ]);
  });

  it('a step-level entry publishes nothing at a job event that is not its step moment', () => {
    const opts = { stepNotify: [{ github_commit_status: { context: 'unit tests' } }, { github_check: { name: 'Lint' } }] };
    for (const name of ['job.scheduled', 'job.started', 'job.finished', 'job.promised_exit_status'] as const) {
      expect(statusUpdatesFor(event(name, { pipeline: off, job: job({ state: 'running' }) }), opts)).toEqual([]);
    }
    // A promise is not the job's end: no per-step status of the job either.
    const per = pipeline({}, 'github', settings({ publish_commit_status_per_step: true }));
    expect(statusUpdatesFor(event('job.promised_exit_status', { pipeline: per, job: job({ state: 'running' }) }))).toEqual([]);
  });

  it("a parallel step's entry is one status for the step, in the words of its worst job, over its whole time", () => {
    const part = (i: number, over: Json) => job({ id: `j${i}`, parallel_group_index: i, parallel_group_total: 3, ...over });
    const jobs = [
      part(0, { state: 'passed', started_at: '2026-11-26T01:00:10.000Z', finished_at: '2026-11-26T01:00:20.000Z' }),
      part(1, { state: 'failed', started_at: '2026-11-26T01:00:00.000Z', finished_at: '2026-11-26T01:00:30.000Z' }),
      part(2, { state: 'passed', started_at: '2026-11-26T01:00:05.000Z', finished_at: '2026-11-26T01:01:40.000Z' }),
    ];
    const opts = { stepNotify: [{ github_commit_status: {} }], step: finished(...jobs) };
    expect(brief(statusUpdatesFor(event('job.finished', { pipeline: off, job: jobs[2] }), opts))).toEqual([
      ['buildkite/web-app/:rspec: RSpec', 'failure', ':rspec: RSpec failed (1 minute, 40 seconds)'],
    ]);
    const failing = { ...opts, step: { state: 'failing' as const, jobs } };
    expect(brief(statusUpdatesFor(event('job.finished', { pipeline: off, job: jobs[1] }), failing))).toEqual([
      ['buildkite/web-app/:rspec: RSpec', 'running', ':rspec: RSpec is failing'],
    ]);
  });

  it.each([
    [[{ state: 'passed' }, { state: 'failed', soft_failed: true }], 'success', 'soft failed'],
    [[{ state: 'passed' }, { state: 'canceled' }], 'canceled', 'was canceled'],
    [[{ state: 'passed' }, { state: 'broken' }], 'error', 'was not run'],
    [[{ state: 'canceled' }, { state: 'timed_out' }], 'failure', 'failed'],
    [[{ state: 'passed' }, { state: 'passed' }], 'success', 'passed'],
  ])('a finished step of %j is %s', (states, state, words) => {
    const status = stepStatus(finished(...states.map((x) => job({ ...x, started_at: null }))), 'Tests');
    expect(status).toEqual({ state, description: `Tests ${words}` });
  });

  it("names a check by its name, else the pipeline's name (build level) or the step's (step level)", () => {
    const buildOpts = {
      buildNotify: [{ github_check: { name: 'Test Suite' } }, { github_check: {} }, { github_check: null }, { github_check: { context: 'old' } }],
    };
    expect(statusUpdatesFor(event('build.finished', { pipeline: { ...off, name: 'Web App' } }), buildOpts).map((u) => u.context)).toEqual([
      'Test Suite',
      'Web App',
      'old',
    ]);
    const stepOpts = { stepNotify: [{ github_check: { name: 'Code Linting', output: { title: 'x' } } }, { github_check: {} }], step: finished(job()) };
    expect(statusUpdatesFor(event('job.finished', { pipeline: off, job: job() }), stepOpts).map((u) => u.context)).toEqual(['Code Linting', ':rspec: RSpec']);
  });

  it('build-level entries publish at build.failing and build.finished only, blocked builds as pending when the entry asks', () => {
    const opts = {
      buildNotify: [{ github_commit_status: { context: 'deploy', blocked_builds_as_pending: true } }, { github_commit_status: { context: 'plain' } }],
    };
    for (const name of ['build.scheduled', 'build.running', 'build.skipped'] as const) {
      expect(statusUpdatesFor(event(name, { pipeline: off, build: build({ state: 'running' }) }), opts)).toEqual([]);
    }
    expect(brief(statusUpdatesFor(event('build.failing', { pipeline: off, build: build({ state: 'failing' }) }), opts))).toEqual([
      ['deploy', 'running', 'Build #12 is failing'],
      ['plain', 'running', 'Build #12 is failing'],
    ]);
    expect(brief(statusUpdatesFor(event('build.finished', { pipeline: off, build: build({ blocked: true }) }), opts))).toEqual([
      ['deploy', 'pending', 'Build #12 is blocked'],
      ['plain', 'success', 'Build #12 passed and is blocked (3 minutes, 2 seconds)'],
    ]);
  });

  it('build-level entries do not apply to job events, nor step-level ones to build events', () => {
    const step = finished(job());
    expect(statusUpdatesFor(event('job.finished', { pipeline: off, job: job() }), { buildNotify: [{ github_commit_status: { context: 'x' } }], step })).toEqual(
      [],
    );
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), { stepNotify: [{ github_commit_status: { context: 'x' } }], step })).toEqual([]);
  });

  it('is GitHub only', () => {
    const gitlab = pipeline({ repository: 'git@gitlab.com:acme/web-app.git' }, 'gitlab', { publish_commit_status: false });
    expect(statusUpdatesFor(event('build.finished', { pipeline: gitlab }), { buildNotify: [{ github_commit_status: { context: 'x' } }] })).toEqual([]);
    const ghe = pipeline({ repository: 'git@github.acme.internal:acme/web-app.git' }, 'github_enterprise', settings({ publish_commit_status: false }));
    expect(statusUpdatesFor(event('build.finished', { pipeline: ghe }), { buildNotify: [{ github_commit_status: { context: 'x' } }] })).toHaveLength(1);
  });

  it('honours `if` through the evaluator, and leaves conditional entries out without one', () => {
    const opts = { buildNotify: [{ github_commit_status: { context: 'on-main' }, if: 'build.branch == "main"' }] };
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), opts)).toEqual([]);
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), { ...opts, evaluateIf: () => true })).toHaveLength(1);
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), { ...opts, evaluateIf: () => false })).toEqual([]);
  });

  it('ignores junk entries, and gives a malformed github_commit_status the default context', () => {
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), { buildNotify: [null, 'x', 3, [], { email: 'a@b.c' }] })).toEqual([]);
    const malformed = { buildNotify: [{ github_commit_status: 'x' }, { github_commit_status: { context: 7 } }] };
    expect(statusUpdatesFor(event('build.finished', { pipeline: off }), malformed).map((u) => u.context)).toEqual(['buildkite/web-app']);
  });
});

describe('commit status rules: the other providers', () => {
  it('GitLab: the project path with its subgroups, build statuses only by its settings', () => {
    const p = pipeline({ repository: 'https://gitlab.com/acme/platform/web-app.git' }, 'gitlab', {
      publish_commit_status: true,
      repository: 'acme/platform/web-app',
    });
    expect(statusUpdatesFor(event('build.finished', { pipeline: p }))).toMatchObject([
      { provider: 'gitlab', repository: 'acme/platform/web-app', context: 'buildkite/web-app' },
    ]);
    // GitLab pipelines have no per-step setting: job events publish nothing.
    expect(statusUpdatesFor(event('job.finished', { pipeline: p, job: job() }))).toEqual([]);
  });

  it('Bitbucket: workspace/repo_slug, per step when asked', () => {
    const p = pipeline({ repository: 'git@bitbucket.org:acme/web-app.git' }, 'bitbucket', {
      publish_commit_status: true,
      publish_commit_status_per_step: true,
    });
    expect(statusUpdatesFor(event('job.finished', { pipeline: p, job: job() }))).toMatchObject([
      { provider: 'bitbucket', repository: 'acme/web-app', context: 'buildkite/web-app/:rspec: RSpec' },
    ]);
  });
});

describe('commit status rules: repository URLs', () => {
  it.each([
    ['github', 'git@github.com:acme/web-app.git', 'acme/web-app'],
    ['github', 'git@github.com:acme/web-app', 'acme/web-app'],
    ['github', 'https://github.com/acme/web-app.git', 'acme/web-app'],
    ['github', 'https://github.com/acme/web-app', 'acme/web-app'],
    ['github', 'https://github.com/acme/web-app/', 'acme/web-app'],
    ['github', 'https://user@github.com/acme/web-app.git', 'acme/web-app'],
    ['github', 'https://github.com/acme/web-app/tree/main', 'acme/web-app'],
    ['github', 'ssh://git@github.com/acme/web-app.git', 'acme/web-app'],
    ['github', 'ssh://git@ssh.github.com:443/acme/web-app.git', 'acme/web-app'],
    ['github', 'ssh://git@github.com:acme/web-app.git', 'acme/web-app'],
    ['github_enterprise', 'git@github.acme.internal:platform/web-app.git', 'platform/web-app'],
    ['github_enterprise', 'https://github.acme.internal:8443/platform/web-app.git', 'platform/web-app'],
    ['gitlab', 'git@gitlab.com:acme/web-app.git', 'acme/web-app'],
    ['gitlab', 'git@gitlab.com:acme/platform/team/web-app.git', 'acme/platform/team/web-app'],
    ['gitlab', 'https://gitlab.com/acme/platform/web-app', 'acme/platform/web-app'],
    ['gitlab', 'https://gitlab.com/acme/platform/web-app/-/tree/main', 'acme/platform/web-app'],
    ['bitbucket', 'git@bitbucket.org:acme/web-app.git', 'acme/web-app'],
    ['bitbucket', 'https://someone@bitbucket.org/acme/web-app.git', 'acme/web-app'],
    ['bitbucket', 'https://bitbucket.org/acme/web-app/src/main/', 'acme/web-app'],
  ] as const)('%s %s -> %s', (provider, url, path) => {
    expect(statusRepositoryPath(provider, url)).toBe(path);
  });

  it.each([
    '',
    'web-app',
    '/srv/git/web-app.git',
    'file:///srv/git/web-app.git',
    'https://github.com/acme',
    'git@github.com:acme',
    'C:\\repos\\web-app',
    'has space:acme/x',
    42,
  ])('names no repository in %p', (url) => {
    expect(statusRepositoryPath('github', url)).toBeNull();
  });
});

describe('commit status rules: words', () => {
  it.each([
    [0, '0 seconds'],
    [1000, '1 second'],
    [45_999, '45 seconds'],
    [60_000, '1 minute'],
    [182_000, '3 minutes, 2 seconds'],
    [3_600_000, '1 hour'],
    [3_661_000, '1 hour, 1 minute, 1 second'],
    [-5, '0 seconds'],
  ])('%d ms is "%s"', (ms, words) => {
    expect(humanDuration(ms)).toBe(words);
  });

  it('keeps a description within 140 characters and a context within 255', () => {
    const long = 'x'.repeat(300);
    const p = pipeline({}, 'github', settings({ publish_commit_status_per_step: true }));
    const [u] = statusUpdatesFor(event('job.finished', { pipeline: p, job: job({ name: long }) }));
    expect(Array.from(u!.description)).toHaveLength(140);
    expect(u!.description.endsWith('…')).toBe(true);
    expect(u!.context).toHaveLength(255);
  });
});
