/** Provider detection from repository URLs, and the provider settings shown and accepted. */

import {
  defaultProviderSettings,
  detectProvider,
  normaliseProviderSettings,
  PROVIDER_IDS,
  providerSettings,
  repositoryPath,
  validateProviderSettings,
  type ProviderId,
} from '../../src/pipelines/provider';

// The settings of the create sample (pipelines__03_create-a-yaml-pipeline.json), in its order.
const GITHUB_SAMPLE_SETTINGS = {
  trigger_mode: 'code',
  build_pull_requests: true,
  pull_request_branch_filter_enabled: false,
  skip_builds_for_existing_commits: false,
  skip_pull_request_builds_for_existing_commits: true,
  build_pull_request_ready_for_review: false,
  build_pull_request_labels_changed: false,
  build_pull_request_forks: false,
  prefix_pull_request_fork_branch_names: true,
  build_branches: true,
  build_tags: false,
  cancel_deleted_branch_builds: false,
  publish_commit_status: true,
  publish_commit_status_per_step: false,
  separate_pull_request_statuses: false,
  publish_blocked_as_pending: false,
  use_step_key_as_commit_status: false,
  filter_enabled: false,
  repository: 'acme-inc/my-pipeline',
};

const GITLAB_DEFAULTS = {
  trigger_mode: 'code',
  build_pull_requests: true,
  pull_request_branch_filter_enabled: false,
  skip_builds_for_existing_commits: false,
  skip_pull_request_builds_for_existing_commits: true,
  build_branches: true,
  build_tags: false,
  cancel_deleted_branch_builds: false,
  publish_commit_status: true,
  filter_enabled: false,
};

const BITBUCKET_DEFAULTS = {
  trigger_mode: 'code',
  build_pull_requests: true,
  pull_request_branch_filter_enabled: false,
  skip_builds_for_existing_commits: false,
  skip_pull_request_builds_for_existing_commits: true,
  build_pull_request_forks: false,
  prefix_pull_request_fork_branch_names: true,
  build_branches: true,
  build_tags: false,
  cancel_deleted_branch_builds: false,
  publish_commit_status: true,
  publish_commit_status_per_step: false,
  filter_enabled: false,
};

const { repository: _repository, ...GITHUB_DEFAULTS } = GITHUB_SAMPLE_SETTINGS;

describe('detectProvider', () => {
  it.each<[string, ProviderId]>([
    ['git@github.com:acme-inc/my-pipeline.git', 'github'],
    ['github.com:acme-inc/my-pipeline.git', 'github'],
    ['https://github.com/acme-inc/my-pipeline.git', 'github'],
    ['https://github.com/acme-inc/my-pipeline', 'github'],
    ['http://github.com/acme-inc/my-pipeline', 'github'],
    ['https://token:x-oauth-basic@github.com/acme-inc/my-pipeline.git', 'github'],
    ['ssh://git@github.com/acme-inc/my-pipeline.git', 'github'],
    ['ssh://git@ssh.github.com:443/acme-inc/my-pipeline.git', 'github'],
    ['git://github.com/acme-inc/my-pipeline.git', 'github'],
    ['https://www.github.com/acme-inc/my-pipeline', 'github'],
    ['HTTPS://GitHub.COM/Acme/Repo', 'github'],
    ['  git@github.com:acme/repo.git  ', 'github'],
    ['git@gitlab.com:group/sub/repo.git', 'gitlab'],
    ['https://gitlab.com/group/repo.git', 'gitlab'],
    ['ssh://git@altssh.gitlab.com:443/group/repo.git', 'gitlab'],
    ['git@bitbucket.org:team/repo.git', 'bitbucket'],
    ['https://user@bitbucket.org/team/repo.git', 'bitbucket'],
    ['ssh://git@altssh.bitbucket.org:443/team/repo.git', 'bitbucket'],
    ['git@github.mycorp.com:team/repo.git', 'github_enterprise'],
    ['https://github.internal:8443/team/repo.git', 'github_enterprise'],
    ['https://acme.ghe.com/team/repo.git', 'github_enterprise'],
    ['git@gitlab.mycorp.com:group/sub/repo.git', 'gitlab_ee'],
    ['https://mygitlab.example.org/group/repo', 'gitlab_ee'],
    ['ssh://git@bitbucket.mycorp.com:7999/proj/repo.git', 'bitbucket_server'],
    ['https://bitbucket.mycorp.com/scm/PROJ/repo.git', 'bitbucket_server'],
    ['git@git.example.com:team/repo.git', 'git'],
    ['https://git.example.com/team/repo.git', 'git'],
    ['https://example.com/github-mirror/repo.git', 'git'], // the path does not count, only the host
    ['/srv/git/repo.git', 'git'],
    ['./repo', 'git'],
    ['../relative/repo.git', 'git'],
    ['file:///srv/github/repo.git', 'git'],
    ['C:\\repos\\github\\repo', 'git'],
    ['C:/repos/github/repo', 'git'],
    ['github.com/acme/repo', 'git'], // not a remote git understands: a relative path
  ])('%s -> %s', (repository, id) => {
    expect(detectProvider(repository)).toBe(id);
  });

  it('uses the configured self-hosted hosts', () => {
    const opts = {
      githubEnterpriseHosts: ['ghe.corp.example'],
      gitlabEeHosts: ['code.corp.example'],
      bitbucketServerHosts: ['stash.corp.example'],
    };
    expect(detectProvider('git@ghe.corp.example:team/repo.git', opts)).toBe('github_enterprise');
    expect(detectProvider('https://code.corp.example/group/sub/repo.git', opts)).toBe('gitlab_ee');
    expect(detectProvider('ssh://git@stash.corp.example:7999/proj/repo.git', opts)).toBe('bitbucket_server');
    expect(detectProvider('https://other.corp.example/team/repo.git', opts)).toBe('git');
  });

  it('matches configured hosts regardless of case, blanks or a port', () => {
    const opts = { gitlabEeHosts: [' Code.Corp.Example:8443 '] };
    expect(detectProvider('https://CODE.corp.example:8443/group/repo.git', opts)).toBe('gitlab_ee');
  });

  it('lets a configured host override the name heuristics', () => {
    expect(detectProvider('git@github-mirror.corp:team/repo.git', { gitlabEeHosts: ['github-mirror.corp'] })).toBe('gitlab_ee');
  });

  it('keeps the hosted services even when configured as self-hosted', () => {
    expect(detectProvider('git@github.com:a/b.git', { githubEnterpriseHosts: ['github.com'] })).toBe('github');
  });

  it('does not match a configured host as a substring', () => {
    expect(detectProvider('git@code.corp.example.evil:a/b.git', { gitlabEeHosts: ['code.corp.example'] })).toBe('git');
  });

  it.each([
    '',
    '   ',
    ':',
    '@',
    '@:',
    ':owner/repo',
    'https://',
    'https:///owner/repo',
    'ssh://@:22/',
    'https://[::1/owner/repo',
    'git@github.com :owner/repo',
    'not a url at all',
    '%%%',
    '\u0000',
    'a'.repeat(100000),
    `https://${'github.'.repeat(10000)}com/a/b`,
  ])('never throws on junk %j', (junk) => {
    expect(() => detectProvider(junk)).not.toThrow();
    expect(() => repositoryPath(junk)).not.toThrow();
  });

  it('answers git for junk', () => {
    for (const junk of ['', '   ', ':', '@:', 'https://', 'ssh://@:22/', 'not a url at all', '%%%']) {
      expect(detectProvider(junk)).toBe('git');
    }
  });

  it('never throws on non-strings or bad options', () => {
    for (const junk of [undefined, null, 42, {}, ['git@github.com:a/b.git']]) {
      expect(detectProvider(junk as unknown as string)).toBe('git');
      expect(repositoryPath(junk as unknown as string)).toBeNull();
    }
    const badOpts = { githubEnterpriseHosts: 'ghe.corp' as unknown as string[], gitlabEeHosts: [null as unknown as string] };
    expect(detectProvider('git@ghe.corp:a/b.git', badOpts)).toBe('git');
  });

  it('handles an IPv6 host', () => {
    expect(detectProvider('ssh://git@[::1]:22/owner/repo.git')).toBe('git');
    expect(repositoryPath('ssh://git@[::1]:22/owner/repo.git')).toBe('owner/repo');
    expect(repositoryPath('git@[::1]:owner/repo.git')).toBe('owner/repo');
  });
});

describe('repositoryPath', () => {
  it.each<[string, string]>([
    ['git@github.com:acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['git@github.com:acme-inc/my-pipeline', 'acme-inc/my-pipeline'],
    ['git@github.com:/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['github.com:acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['ssh://git@github.com/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['ssh://git@github.com:22/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['ssh://git@github.com:acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['git+ssh://git@github.com/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['git://github.com/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline/', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline.git/', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline/tree/main/src', 'acme-inc/my-pipeline'],
    ['https://github.com/acme-inc/my-pipeline?tab=readme#top', 'acme-inc/my-pipeline'],
    ['https://github.com//acme-inc//my-pipeline', 'acme-inc/my-pipeline'],
    ['https://user:p%40ss@github.com:443/acme-inc/my-pipeline.git', 'acme-inc/my-pipeline'],
    ['https://github.com/Acme-Inc/My.Pipeline.GIT', 'Acme-Inc/My.Pipeline'],
    ['https://github.com/acme/repo.github.io.git', 'acme/repo.github.io'],
    ['git@gitlab.com:group/sub/repo.git', 'group/sub/repo'],
    ['https://gitlab.com/group/sub/subsub/repo.git', 'group/sub/subsub/repo'],
    ['https://gitlab.com/group/sub/repo/-/tree/main', 'group/sub/repo'],
    ['https://gitlab.mycorp.com/scm/proj/repo.git', 'scm/proj/repo'], // a GitLab group called scm
    ['git@bitbucket.org:team/repo.git', 'team/repo'],
    ['https://user@bitbucket.org/team/repo.git', 'team/repo'],
    ['https://bitbucket.org/team/repo/src/main/', 'team/repo'],
    ['https://bitbucket.mycorp.com/scm/PROJ/repo.git', 'PROJ/repo'],
    ['https://host.example/bitbucket/scm/PROJ/repo.git', 'PROJ/repo'],
    ['https://bitbucket.mycorp.com/scm/~jdoe/repo.git', '~jdoe/repo'],
    ['ssh://git@bitbucket.mycorp.com:7999/proj/repo.git', 'proj/repo'],
    ['https://bitbucket.mycorp.com/projects/PROJ/repos/repo/browse', 'PROJ/repo'],
    ['https://git.example.com/team/repo.git', 'team/repo'],
    ['git@git.example.com:team/repo.git', 'team/repo'],
  ])('%s -> %s', (repository, path) => {
    expect(repositoryPath(repository)).toBe(path);
  });

  it.each([
    '/srv/git/repo.git',
    'file:///srv/git/team/repo.git',
    './team/repo',
    'https://github.com',
    'https://github.com/',
    'https://github.com/acme-inc',
    'git@github.com:repo.git',
    'git@github.com:',
    'https://git.example.com/repo.git',
    'https://github.com/.git',
    '',
    'junk',
  ])('has no owner/name in %j', (repository) => {
    expect(repositoryPath(repository)).toBeNull();
  });
});

describe('defaultProviderSettings', () => {
  it('gives the GitHub set of the create sample, without repository', () => {
    expect(defaultProviderSettings('github')).toEqual(GITHUB_DEFAULTS);
    // Same order too, so responses read like the real API's.
    expect(Object.keys(defaultProviderSettings('github'))).toEqual(Object.keys(GITHUB_DEFAULTS));
  });

  it('gives GitHub Enterprise the GitHub set', () => {
    expect(defaultProviderSettings('github_enterprise')).toEqual(GITHUB_DEFAULTS);
  });

  it('gives GitLab its subset', () => {
    expect(defaultProviderSettings('gitlab')).toEqual(GITLAB_DEFAULTS);
    expect(defaultProviderSettings('gitlab_ee')).toEqual(GITLAB_DEFAULTS);
  });

  it('gives Bitbucket its subset', () => {
    expect(defaultProviderSettings('bitbucket')).toEqual(BITBUCKET_DEFAULTS);
    expect(defaultProviderSettings('bitbucket_server')).toEqual(BITBUCKET_DEFAULTS);
  });

  it('gives git nothing', () => {
    expect(defaultProviderSettings('git')).toEqual({});
  });

  it('returns a fresh object each time', () => {
    const a = defaultProviderSettings('github');
    a.build_tags = true;
    expect(defaultProviderSettings('github').build_tags).toBe(false);
  });
});

describe('validateProviderSettings', () => {
  it('accepts nothing at all', () => {
    for (const id of PROVIDER_IDS) {
      expect(validateProviderSettings(id, undefined)).toEqual([]);
      expect(validateProviderSettings(id, null)).toEqual([]);
      expect(validateProviderSettings(id, {})).toEqual([]);
    }
  });

  it('accepts every GitHub setting with a good value', () => {
    expect(
      validateProviderSettings('github', {
        ...GITHUB_DEFAULTS,
        trigger_mode: 'deployment',
        build_tags: true,
        pull_request_branch_filter_configuration: 'main features/* !features/wip',
        filter_condition: 'build.branch == "main"',
      }),
    ).toEqual([]);
  });

  it('accepts each trigger mode', () => {
    for (const mode of ['code', 'deployment', 'fork', 'none']) {
      expect(validateProviderSettings('github', { trigger_mode: mode })).toEqual([]);
      expect(validateProviderSettings('bitbucket', { trigger_mode: mode })).toEqual([]);
    }
  });

  it('rejects an unknown trigger mode', () => {
    for (const mode of ['Code', 'push', '', 1, true]) {
      expect(validateProviderSettings('github', { trigger_mode: mode })).toEqual([
        { field: 'provider_settings.trigger_mode', code: 'is not included in the list' },
      ]);
    }
  });

  it('requires booleans to be booleans', () => {
    expect(validateProviderSettings('github', { build_tags: 'true', build_branches: 1, publish_commit_status: {} })).toEqual([
      { field: 'provider_settings.build_tags', code: 'must be a boolean' },
      { field: 'provider_settings.build_branches', code: 'must be a boolean' },
      { field: 'provider_settings.publish_commit_status', code: 'must be a boolean' },
    ]);
  });

  it('requires the free-text settings to be strings of bounded length', () => {
    expect(
      validateProviderSettings('gitlab', {
        filter_condition: 'x'.repeat(1001),
        pull_request_branch_filter_configuration: false,
      }),
    ).toEqual([
      { field: 'provider_settings.filter_condition', code: 'is too long (maximum is 1000 characters)' },
      { field: 'provider_settings.pull_request_branch_filter_configuration', code: 'must be a string' },
    ]);
    const longest = `build.branch == "${'x'.repeat(1000 - 'build.branch == ""'.length)}"`;
    expect(longest).toHaveLength(1000);
    expect(validateProviderSettings('gitlab', { filter_condition: longest })).toEqual([]);
    expect(validateProviderSettings('gitlab', { filter_condition: 7 })).toEqual([{ field: 'provider_settings.filter_condition', code: 'must be a string' }]);
    expect(validateProviderSettings('github', { pull_request_branch_filter_configuration: 'a'.repeat(4097) })).toEqual([
      {
        field: 'provider_settings.pull_request_branch_filter_configuration',
        code: 'is too long (maximum is 4096 characters)',
      },
    ]);
  });

  it('checks the pull request branch filter is usable', () => {
    expect(validateProviderSettings('github', { pull_request_branch_filter_configuration: 'main !' })).toEqual([
      {
        field: 'provider_settings.pull_request_branch_filter_configuration',
        code: 'is not a valid branch filter: `!` must be followed by a pattern',
      },
    ]);
    expect(validateProviderSettings('github', { pull_request_branch_filter_configuration: '' })).toEqual([]);
  });

  it('rejects settings of another provider, naming the provider', () => {
    expect(validateProviderSettings('gitlab', { build_pull_request_forks: true, separate_pull_request_statuses: true })).toEqual([
      { field: 'provider_settings.build_pull_request_forks', code: 'is not a setting of a gitlab repository' },
      { field: 'provider_settings.separate_pull_request_statuses', code: 'is not a setting of a gitlab repository' },
    ]);
    expect(validateProviderSettings('bitbucket_server', { build_pull_request_labels_changed: false })).toEqual([
      {
        field: 'provider_settings.build_pull_request_labels_changed',
        code: 'is not a setting of a bitbucket_server repository',
      },
    ]);
    expect(validateProviderSettings('git', { trigger_mode: 'code' })).toEqual([
      { field: 'provider_settings.trigger_mode', code: 'is not a setting of a git repository' },
    ]);
  });

  it('takes every setting the docs list for a provider, and only its own', () => {
    // pipelines.md, "Provider settings properties": a sample per provider, as Terraform sets them.
    const documented: [ProviderId, Record<string, unknown>][] = [
      [
        'github',
        {
          ignore_default_branch_pull_requests: true,
          build_merge_group_checks_requested: true,
          build_release_published: false,
          github_workflow_access_tokens_enabled: true,
        },
      ],
      [
        'github',
        { build_issue_comment_created: true, issue_comment_command_word: '/ci', issue_comment_match_mode: 'contains', review_comment_match_mode: 'exact' },
      ],
      [
        'github_enterprise',
        { build_pull_request_base_branch_changed: true, skip_builds_for_closed_pull_requests: true, cancel_when_merge_group_destroyed: true },
      ],
      ['gitlab', { build_pull_request_merge: true, build_pull_request_base_branch_changed: true, filter_enabled: true }],
      ['bitbucket', { ignore_default_branch_pull_requests: true, publish_commit_status_per_step: true }],
      ['bitbucket_server', { build_branches: true, build_tags: false }],
    ];
    for (const [id, settings] of documented) {
      expect({ id, errors: validateProviderSettings(id, settings) }).toEqual({ id, errors: [] });
      // Stored as sent, and shown once set (these have no default).
      expect(providerSettings(id, 'git@example.com:a/b.git', normaliseProviderSettings(id, settings))).toMatchObject(settings);
    }
    expect(validateProviderSettings('github_enterprise', { github_workflow_access_tokens_enabled: true, build_pull_request_merge: true })).toEqual([
      { field: 'provider_settings.github_workflow_access_tokens_enabled', code: 'is not a setting of a github_enterprise repository' },
      { field: 'provider_settings.build_pull_request_merge', code: 'is not a setting of a github_enterprise repository' },
    ]);
    expect(validateProviderSettings('gitlab', { ignore_default_branch_pull_requests: true, build_release_created: true })).toEqual([
      { field: 'provider_settings.ignore_default_branch_pull_requests', code: 'is not a setting of a gitlab repository' },
      { field: 'provider_settings.build_release_created', code: 'is not a setting of a gitlab repository' },
    ]);
    expect(
      validateProviderSettings('github', { issue_comment_command_word: ' ', issue_comment_match_mode: 'fuzzy', review_comment_command_word: 'x'.repeat(101) }),
    ).toEqual([
      { field: 'provider_settings.issue_comment_command_word', code: 'must be a word, such as /bk' },
      { field: 'provider_settings.issue_comment_match_mode', code: 'is not included in the list' },
      { field: 'provider_settings.review_comment_command_word', code: 'is too long (maximum is 100 characters)' },
    ]);
    // Unset, they are not shown: the settings a pipeline shows by default stay the sample's.
    expect(Object.keys(providerSettings('github', 'git@github.com:a/b.git', {}))).not.toContain('build_release_published');
  });

  it('rejects keys that are no provider setting at all', () => {
    expect(validateProviderSettings('github', { build_everything: true, trigger_mode: 'code' })).toEqual([
      { field: 'provider_settings.build_everything', code: 'is not a known provider setting' },
    ]);
    expect(validateProviderSettings('git', { nope: 1 })).toEqual([{ field: 'provider_settings.nope', code: 'is not a known provider setting' }]);
  });

  it('is not fooled by keys inherited from Object.prototype', () => {
    const input = JSON.parse('{"__proto__": true, "constructor": true, "toString": "x", "hasOwnProperty": false}');
    expect(validateProviderSettings('github', input)).toEqual([
      { field: 'provider_settings.__proto__', code: 'is not a known provider setting' },
      { field: 'provider_settings.constructor', code: 'is not a known provider setting' },
      { field: 'provider_settings.toString', code: 'is not a known provider setting' },
      { field: 'provider_settings.hasOwnProperty', code: 'is not a known provider setting' },
    ]);
  });

  it('ignores a read-only repository echoed back, for every provider', () => {
    for (const id of PROVIDER_IDS) {
      expect(validateProviderSettings(id, { repository: 'acme-inc/my-pipeline' })).toEqual([]);
      expect(validateProviderSettings(id, { repository: 42 })).toEqual([]);
    }
  });

  it('accepts a whole settings object as read from the API', () => {
    expect(validateProviderSettings('github', GITHUB_SAMPLE_SETTINGS)).toEqual([]);
  });

  it("accepts the Go client's misspelt separate_pull_requests_statuses where the setting exists", () => {
    expect(validateProviderSettings('github', { separate_pull_requests_statuses: true })).toEqual([]);
    expect(validateProviderSettings('github_enterprise', { separate_pull_requests_statuses: false })).toEqual([]);
    expect(validateProviderSettings('github', { separate_pull_requests_statuses: 'yes' })).toEqual([
      { field: 'provider_settings.separate_pull_requests_statuses', code: 'must be a boolean' },
    ]);
    expect(validateProviderSettings('bitbucket', { separate_pull_requests_statuses: true })).toEqual([
      { field: 'provider_settings.separate_pull_requests_statuses', code: 'is not a setting of a bitbucket repository' },
    ]);
  });

  it('accepts null as "back to the default"', () => {
    expect(validateProviderSettings('github', { trigger_mode: null, build_tags: null, filter_condition: null })).toEqual([]);
  });

  it('rejects provider_settings that is not an object', () => {
    for (const junk of ['github', 42, true, [], [{ build_tags: true }]]) {
      expect(validateProviderSettings('github', junk)).toEqual([{ field: 'provider_settings', code: 'must be an object' }]);
    }
  });
});

describe('normaliseProviderSettings', () => {
  it('keeps what was sent, in display order, without repository', () => {
    expect(
      normaliseProviderSettings('github', {
        repository: 'acme/other',
        build_tags: true,
        trigger_mode: 'fork',
        filter_condition: 'build.tag != null',
      }),
    ).toEqual({ trigger_mode: 'fork', build_tags: true, filter_condition: 'build.tag != null' });
    expect(Object.keys(normaliseProviderSettings('github', { filter_condition: '', build_tags: true, trigger_mode: 'fork' }))).toEqual([
      'trigger_mode',
      'build_tags',
      'filter_condition',
    ]);
  });

  it('resolves the alias', () => {
    expect(normaliseProviderSettings('github', { separate_pull_requests_statuses: true })).toEqual({
      separate_pull_request_statuses: true,
    });
  });

  it('prefers the canonical spelling when both are sent', () => {
    const want = { separate_pull_request_statuses: false };
    expect(normaliseProviderSettings('github', { separate_pull_requests_statuses: true, separate_pull_request_statuses: false })).toEqual(want);
    expect(normaliseProviderSettings('github', { separate_pull_request_statuses: false, separate_pull_requests_statuses: true })).toEqual(want);
  });

  it('keeps null so that merging it resets a setting', () => {
    expect(normaliseProviderSettings('gitlab', { build_tags: null })).toEqual({ build_tags: null });
  });

  it('drops anything validation would have refused', () => {
    expect(normaliseProviderSettings('gitlab', { build_pull_request_forks: true, nope: true, build_tags: {}, build_branches: false })).toEqual({
      build_branches: false,
    });
    expect(normaliseProviderSettings('git', { trigger_mode: 'code', repository: 'a/b' })).toEqual({});
    for (const junk of [undefined, null, 'x', [], 3]) {
      expect(normaliseProviderSettings('github', junk)).toEqual({});
    }
  });
});

describe('providerSettings', () => {
  it('reproduces the create sample for a GitHub pipeline with no overrides', () => {
    const settings = providerSettings('github', 'git@github.com:acme-inc/my-pipeline.git', {});
    expect(settings).toEqual(GITHUB_SAMPLE_SETTINGS);
    expect(Object.keys(settings)).toEqual(Object.keys(GITHUB_SAMPLE_SETTINGS));
  });

  it('overlays stored overrides on the defaults', () => {
    expect(
      providerSettings('github', 'https://github.com/acme-inc/my-pipeline', {
        trigger_mode: 'none',
        build_tags: true,
        build_pull_requests: false,
      }),
    ).toEqual({ ...GITHUB_SAMPLE_SETTINGS, trigger_mode: 'none', build_tags: true, build_pull_requests: false });
  });

  it('shows the free-text settings only once set, in their place', () => {
    const settings = providerSettings('github', 'git@github.com:acme-inc/my-pipeline.git', {
      filter_condition: 'build.branch == "main"',
      pull_request_branch_filter_configuration: '',
    });
    expect(settings).toEqual({
      ...GITHUB_SAMPLE_SETTINGS,
      pull_request_branch_filter_configuration: '',
      filter_condition: 'build.branch == "main"',
    });
    const keys = Object.keys(settings);
    expect(keys.indexOf('pull_request_branch_filter_configuration')).toBe(keys.indexOf('pull_request_branch_filter_enabled') + 1);
    expect(keys.indexOf('filter_condition')).toBe(keys.indexOf('filter_enabled') + 1);
    expect(keys[keys.length - 1]).toBe('repository');
  });

  it('falls back to the default for a null override', () => {
    expect(providerSettings('github', 'git@github.com:acme-inc/my-pipeline.git', { build_tags: null, filter_condition: null })).toEqual(GITHUB_SAMPLE_SETTINGS);
  });

  it('hides overrides the provider does not have, e.g. after the repository moved', () => {
    expect(
      providerSettings('gitlab', 'git@gitlab.com:group/sub/repo.git', {
        build_pull_request_forks: true,
        separate_pull_request_statuses: true,
        build_tags: true,
        repository: 'someone/else',
      }),
    ).toEqual({ ...GITLAB_DEFAULTS, build_tags: true, repository: 'group/sub/repo' });
  });

  it('gives Bitbucket Server its defaults with the project path', () => {
    expect(providerSettings('bitbucket_server', 'https://bitbucket.mycorp.com/scm/PROJ/repo.git', {})).toEqual({
      ...BITBUCKET_DEFAULTS,
      repository: 'PROJ/repo',
    });
  });

  it('gives GitHub Enterprise the GitHub set', () => {
    expect(providerSettings('github_enterprise', 'git@github.mycorp.com:team/repo.git', {})).toEqual({
      ...GITHUB_DEFAULTS,
      repository: 'team/repo',
    });
  });

  it('gives git no settings at all', () => {
    expect(providerSettings('git', 'git@git.example.com:team/repo.git', { build_tags: true })).toEqual({});
  });

  it('leaves repository out when the URL has no owner/name', () => {
    expect(providerSettings('github', 'https://github.com/', {})).toEqual(GITHUB_DEFAULTS);
  });

  it('round-trips: settings read from the API validate, normalise and render to themselves', () => {
    const shown = providerSettings('github', 'git@github.com:acme-inc/my-pipeline.git', { build_tags: true });
    expect(validateProviderSettings('github', shown)).toEqual([]);
    const stored = normaliseProviderSettings('github', shown);
    expect(stored).not.toHaveProperty('repository');
    expect(providerSettings('github', 'git@github.com:acme-inc/my-pipeline.git', stored)).toEqual(shown);
  });

  it('agrees with detectProvider: every named provider has an object, git has {}', () => {
    const repos: Record<ProviderId, string> = {
      github: 'git@github.com:a/b.git',
      github_enterprise: 'git@github.corp:a/b.git',
      gitlab: 'git@gitlab.com:a/b.git',
      gitlab_ee: 'git@gitlab.corp:a/b.git',
      bitbucket: 'git@bitbucket.org:a/b.git',
      bitbucket_server: 'ssh://git@bitbucket.corp:7999/a/b.git',
      git: 'git@example.com:a/b.git',
    };
    for (const id of PROVIDER_IDS) {
      const repo = repos[id];
      expect(detectProvider(repo)).toBe(id);
      const settings = providerSettings(id, repo, {});
      if (id === 'git') expect(settings).toEqual({});
      else expect(settings).toEqual({ ...defaultProviderSettings(id), repository: 'a/b' });
    }
  });
});
