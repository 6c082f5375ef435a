import type { FieldError } from '../../src/core/errors';
import { codesOf, errorsOf, yaml } from '../support/configuration';
import { normaliseVisualSteps, parseConfiguration, type ScriptStep, type Step, type TriggerStep } from '../../src/pipelines/configuration';

/** A script step with every default, for building expectations. */
function script(overrides: Partial<ScriptStep>): ScriptStep {
  return {
    type: 'script',
    name: null,
    command: null,
    artifact_paths: null,
    branch_configuration: null,
    env: {},
    timeout_in_minutes: null,
    agent_query_rules: [],
    concurrency: null,
    parallelism: null,
    key: null,
    soft_fail: false,
    retry: null,
    ...overrides,
  };
}

/** A trigger step of that pipeline with every default (HEAD of the triggering build's branch), for building expectations. */
function trigger(pipelineSlug: string): TriggerStep {
  return {
    type: 'trigger',
    name: null,
    trigger_project_slug: pipelineSlug,
    trigger_commit: 'HEAD',
    trigger_branch: '',
    trigger_message: null,
    trigger_env: {},
    trigger_meta_data: {},
    trigger_async: false,
    branch_configuration: null,
  };
}

const steps = (doc: string): Step[] => parseConfiguration(doc).steps;

describe('parseConfiguration: step forms', () => {
  it('reads a full command step', () => {
    const result = parseConfiguration(
      yaml(
        'env:',
        '  RELEASE: true',
        '  LEVEL: 3',
        'steps:',
        '  - label: ":hammer: Build"',
        '    name: ignored because label wins',
        '    commands:',
        '      - make',
        '      - make test',
        '    artifact_paths: ["pkg/*.tgz", "logs/**/*"]',
        '    branches: [main, "release/*", "!wip"]',
        '    env:',
        '      GOOS: linux',
        '      CGO: 0',
        '      VERBOSE: false',
        '    timeout_in_minutes: 30',
        '    agents: {queue: deploy, os: linux}',
        '    concurrency: 1',
        '    concurrency_group: deploy/prod',
        '    parallelism: 4',
        '    key: build',
        '    soft_fail: [{exit_status: 1}, {exit_status: "*"}]',
        '    retry:',
        '      automatic:',
        '        - exit_status: -1',
        '          limit: 3',
        '        - limit: 1',
        '      manual: {allowed: false}',
        '    depends_on: ~',
      ),
    );
    expect(result).toEqual({
      env: { RELEASE: 'true', LEVEL: '3' },
      notify: [],
      notices: [],
      steps: [
        {
          type: 'script',
          name: ':hammer: Build',
          command: 'make\nmake test',
          artifact_paths: 'pkg/*.tgz;logs/**/*',
          branch_configuration: 'main release/* !wip',
          env: { GOOS: 'linux', CGO: '0', VERBOSE: 'false' },
          timeout_in_minutes: 30,
          agent_query_rules: ['queue=deploy', 'os=linux'],
          concurrency: 1,
          concurrency_group: 'deploy/prod',
          parallelism: 4,
          key: 'build',
          // `depends_on: ~` is "depends on nothing": it runs at once, whatever stands before it.
          depends_on: [],
          soft_fail: [{ exit_status: 1 }, { exit_status: '*' }],
          retry: {
            automatic: [
              { exit_status: -1, limit: 3 },
              { exit_status: '*', limit: 1 },
            ],
            manual: { allowed: false, reason: null, permit_on_passed: false },
          },
        },
      ],
    });
  });

  it('fills every default of a minimal command step and keeps exactly the documented keys', () => {
    const [step] = steps(yaml('steps:', '  - command: make'));
    expect(step).toEqual(script({ command: 'make' }));
    expect(Object.keys(step!)).toEqual([
      'type',
      'name',
      'command',
      'artifact_paths',
      'branch_configuration',
      'env',
      'timeout_in_minutes',
      'agent_query_rules',
      'concurrency',
      'parallelism',
      'key',
      'soft_fail',
      'retry',
    ]);
    expect(JSON.parse(JSON.stringify(step))).toEqual(step);
  });

  it('accepts a configuration whose only step uploads the pipeline from the repository', () => {
    expect(parseConfiguration(yaml('steps:', '  - command: buildkite-agent pipeline upload'))).toEqual({
      steps: [script({ command: 'buildkite-agent pipeline upload' })],
      env: {},
      notify: [],
      notices: [],
    });
  });

  it('accepts a bare list of steps as the whole document', () => {
    expect(parseConfiguration(yaml('- command: a', '- wait', '- command: b'))).toEqual({
      steps: [script({ command: 'a' }), { type: 'waiter', continue_on_failure: false }, script({ command: 'b' })],
      env: {},
      notify: [],
      notices: [],
    });
  });

  it('takes `name` when there is no `label`, and `id` or `identifier` as the key', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - {command: a, name: Alpha, id: alpha}',
          '  - {command: b, label: Beta, identifier: beta}',
          '  - {command: c, label: ~, name: Gamma}',
        ),
      ),
    ).toEqual([
      script({ command: 'a', name: 'Alpha', key: 'alpha' }),
      script({ command: 'b', name: 'Beta', key: 'beta' }),
      script({ command: 'c', name: 'Gamma' }),
    ]);
  });

  it("reads a plugin item of several keys as one plugin per key, as the agent's parser does (the docs' lock example)", () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - command: migrate',
          '    plugins:',
          '      - vault-secrets#v2.2.1:',
          '        server: "https://vault"',
          '        auth: { method: approle }',
          '      - docker#v5.0.0: { image: x }',
        ),
      ),
    ).toEqual([
      script({
        command: 'migrate',
        plugins: [{ 'vault-secrets#v2.2.1': null }, { server: 'https://vault' }, { auth: { method: 'approle' } }, { 'docker#v5.0.0': { image: 'x' } }],
      }),
    ]);
  });

  it('reads a plugins-only step as a script step without a command', () => {
    expect(
      steps(yaml('steps:', '  - label: Lint', '    plugins:', '      - docker-compose#v5.0.0:', '          run: app', '          config: [a.yml, b.yml]')),
    ).toEqual([script({ name: 'Lint', command: null, plugins: [{ 'docker-compose#v5.0.0': { run: 'app', config: ['a.yml', 'b.yml'] } }] })]);
  });

  it('reads every form of wait step', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - wait',
          '  - "waiter"',
          '  - wait: ~',
          '  - wait: "Tests pass"',
          '    continue_on_failure: true',
          '  - waiter: ~',
          '    continue_on_failure: false',
        ),
      ),
    ).toEqual([
      { type: 'waiter', continue_on_failure: false },
      { type: 'waiter', continue_on_failure: false },
      { type: 'waiter', continue_on_failure: false },
      { type: 'waiter', continue_on_failure: true },
      { type: 'waiter', continue_on_failure: false },
    ]);
  });

  it('reads block and input steps, with their fields', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - block',
          '  - input',
          '  - block: ":rocket: Release"',
          '    prompt: Ship it?',
          '    branches: [main]',
          '    fields:',
          '      - text: Release notes',
          '        key: release-notes',
          '        hint: Markdown',
          '        required: false',
          '        default: none',
          '      - select: Environment',
          '        key: deploy/env',
          '        options:',
          '          - {label: Staging, value: staging}',
          '          - {label: Production, value: 2}',
          '        default: staging',
          '      - select: Regions',
          '        key: regions',
          '        multiple: true',
          '        options: [{label: EU, value: eu}, {label: US, value: us}]',
          '        default: [us, eu]',
          '  - input: ~',
          '    label: Who are you?',
          '  - block: ~',
          '    name: Named',
        ),
      ),
    ).toEqual([
      { type: 'manual', label: 'block', prompt: null, fields: [], branch_configuration: null },
      { type: 'manual', label: 'input', input: true, prompt: null, fields: [], branch_configuration: null },
      {
        type: 'manual',
        label: ':rocket: Release',
        prompt: 'Ship it?',
        branch_configuration: 'main',
        fields: [
          { key: 'release-notes', text: 'Release notes', hint: 'Markdown', required: false, default: 'none' },
          {
            key: 'deploy/env',
            select: 'Environment',
            default: 'staging',
            options: [
              { label: 'Staging', value: 'staging' },
              { label: 'Production', value: '2' },
            ],
          },
          {
            key: 'regions',
            select: 'Regions',
            default: ['us', 'eu'],
            options: [
              { label: 'EU', value: 'eu' },
              { label: 'US', value: 'us' },
            ],
            multiple: true,
          },
        ],
      },
      { type: 'manual', label: 'Who are you?', input: true, prompt: null, fields: [], branch_configuration: null },
      { type: 'manual', label: 'Named', prompt: null, fields: [], branch_configuration: null },
    ]);
  });

  it('reads trigger steps, defaulting to HEAD of the triggering build branch', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - trigger: deploy',
          '  - trigger: "deploy-app"',
          '    label: ":rocket: Deploy"',
          '    async: true',
          '    branches: main',
          '    build:',
          '      message: "Deploy ${BUILDKITE_COMMIT}"',
          '      commit: 0123456',
          '      branch: 2024.1',
          '      env: {TARGET: prod, REPLICAS: 3}',
          '      meta_data: {release: yes}',
        ),
      ),
    ).toEqual([
      trigger('deploy'),
      {
        type: 'trigger',
        name: ':rocket: Deploy',
        trigger_project_slug: 'deploy-app',
        // Written as plain YAML numbers; kept exactly as written, not as 123456 and 2024.1.
        trigger_commit: '0123456',
        trigger_branch: '2024.1',
        trigger_message: 'Deploy ${BUILDKITE_COMMIT}',
        trigger_env: { TARGET: 'prod', REPLICAS: '3' },
        trigger_meta_data: { release: 'yes' },
        trigger_async: true,
        branch_configuration: 'main',
      },
    ]);
  });

  it('flattens groups in place', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - command: first',
          '  - group: ":test_tube: Tests"',
          '    key: tests',
          '    steps:',
          '      - command: unit',
          '      - wait',
          '      - command: integration',
          '  - group: ~',
          '    label: Deploy',
          '    steps: [{trigger: deploy}]',
          '  - command: last',
        ),
      ).map((s) => (s.type === 'script' ? s.command : s.type)),
    ).toEqual(['first', 'unit', 'waiter', 'integration', 'trigger', 'last']);
  });

  it("keeps a group's key on its command steps, in the one namespace of step keys", () => {
    const parsed = steps(
      yaml(
        'steps:',
        '  - group: Tests',
        '    key: tests',
        '    steps:',
        '      - command: unit',
        '      - wait',
        '  - group: Other',
        '    steps: [{command: lint}]',
        '  - command: last',
      ),
    );
    expect(parsed.map((s) => (s.type === 'script' ? [s.command, s.group_key ?? null] : [s.type]))).toEqual([
      ['unit', 'tests'],
      ['waiter'],
      ['lint', null],
      ['last', null],
    ]);
    expect(codesOf(yaml('steps:', '  - command: a', '    key: tests', '  - group: Tests', '    key: tests', '    steps: [{command: b}]'))).toEqual([
      'step 2 (line 5): "key" "tests" is already used by step 1',
    ]);
  });

  it("keeps a group's label (`group`, else `label` or `name`) on each of its steps, for its jobs' BUILDKITE_GROUP_LABEL", () => {
    const parsed = steps(
      yaml(
        'steps:',
        '  - group: ":lock: Audit"',
        '    steps:',
        '      - command: unit',
        '      - wait',
        '      - block: Go',
        '  - group: ~',
        '    name: Named',
        '    steps: [{trigger: deploy}]',
        '  - group: ~',
        '    steps: [{command: unlabelled}]',
        '  - command: last',
      ),
    );
    expect(parsed.map((s) => [s.type, s.group_label ?? null])).toEqual([
      ['script', ':lock: Audit'],
      ['waiter', ':lock: Audit'],
      ['manual', ':lock: Audit'],
      ['trigger', 'Named'],
      ['script', null],
      ['script', null],
    ]);
  });

  it('accepts the visual form written as YAML (explicit `type`)', () => {
    expect(
      steps(
        yaml(
          'steps:',
          '  - type: script',
          '    name: Build',
          '    command: make',
          '    agent_query_rules: [queue=default]',
          '    branch_configuration: main',
          '  - type: waiter',
          '    continue_on_failure: true',
          '  - type: manual',
          '    label: Go?',
          '  - type: trigger',
          '    trigger_project_slug: deploy',
          '    trigger_commit: abc123',
          '    trigger_async: true',
        ),
      ),
    ).toEqual([
      script({ name: 'Build', command: 'make', agent_query_rules: ['queue=default'], branch_configuration: 'main' }),
      { type: 'waiter', continue_on_failure: true },
      { type: 'manual', label: 'Go?', prompt: null, fields: [], branch_configuration: null },
      {
        type: 'trigger',
        name: null,
        trigger_project_slug: 'deploy',
        trigger_commit: 'abc123',
        trigger_branch: '',
        trigger_message: null,
        trigger_env: {},
        trigger_meta_data: {},
        trigger_async: true,
        branch_configuration: null,
      },
    ]);
  });
});

describe("parseConfiguration: the pipeline schema's forms", () => {
  it('reads the nested forms: a step whose attributes sit under its keyword', () => {
    const parsed = parseConfiguration(
      yaml(
        'steps:',
        '  - command: { command: make, label: Build }',
        '  - wait: { continue_on_failure: true }',
        '  - block: { prompt: Ship?, fields: [{ text: Name, key: name }] }',
        '  - input: { key: details, type: input }',
        '  - label: Outer wins',
        '    commands: { label: inner, command: test }',
      ),
    );
    expect(parsed.steps).toMatchObject([
      { type: 'script', command: 'make', name: 'Build' },
      { type: 'waiter', continue_on_failure: true },
      { type: 'manual', label: 'block', prompt: 'Ship?', fields: [{ text: 'Name', key: 'name' }] },
      { type: 'manual', label: 'input', input: true, key: 'details' },
      { type: 'script', command: 'test', name: 'Outer wins' },
    ]);
  });

  it('takes `type: input` or `block` with no label as the label, and reports if_changed on trigger and group steps as on command steps', () => {
    const parsed = parseConfiguration(
      yaml(
        'steps:',
        '  - { key: approve, type: input }',
        '  - { type: block }',
        '  - trigger: deploy',
        '    if_changed: "*.txt"',
        '  - group: G',
        '    if_changed: "*.go"',
        '    steps: [{ command: go test }]',
      ),
    );
    expect(parsed.steps.slice(0, 2)).toMatchObject([
      { type: 'manual', label: 'input', input: true, key: 'approve' },
      { type: 'manual', label: 'block' },
    ]);
    expect(parsed.notices).toEqual([
      'step 3: "if_changed" is accepted but not acted on: the agent applies it at upload; the server does not',
      'step 4: "if_changed" is accepted but not acted on: the agent applies it at upload; the server does not',
    ]);
  });
});

describe('parseConfiguration: properties', () => {
  it('applies top-level agents and priority to script steps that name none, reports the top-level keys it does not act on, and leaves undocumented ones (anchor holders) alone', () => {
    const parsed = parseConfiguration(
      yaml(
        'agents:',
        '  queue: default',
        'notify: [{email: dev@example.com}]',
        'priority: 2',
        'image: ubuntu:24.04',
        'cache: [node_modules]',
        'x-anchors: {anything: [goes, here]}',
        'steps:',
        '  - command: a',
        '  - command: b',
        '    agents: [queue=fast, "os=linux"]',
        '    priority: -1',
        '  - command: c',
        '    agents: {}',
        '  - wait',
      ),
    );
    expect(parsed.steps).toEqual([
      script({ command: 'a', agent_query_rules: ['queue=default'], priority: 2 }),
      script({ command: 'b', agent_query_rules: ['queue=fast', 'os=linux'], priority: -1 }),
      script({ command: 'c', agent_query_rules: ['queue=default'], priority: 2 }),
      { type: 'waiter', continue_on_failure: false },
    ]);
    // notify is read and kept (test/pipelines/notify.test.ts), so it is not reported.
    expect(parsed.notify).toEqual([{ email: 'dev@example.com' }]);
    expect(parsed.notices).toEqual([
      'top level: "image" is accepted but not acted on: the image is not passed to the agent (BUILDKITE_IMAGE)',
      'top level: "cache" is accepted but not acted on: caches are a feature of Buildkite hosted agents',
    ]);
  });

  it('normalises retry and soft_fail', () => {
    const cases: [string, Pick<ScriptStep, 'retry' | 'soft_fail'>][] = [
      ['retry: {automatic: true}', { retry: { automatic: [{ exit_status: '*', limit: 2 }] }, soft_fail: false }],
      ['retry: {automatic: false}', { retry: null, soft_fail: false }],
      ['retry: {manual: {allowed: false}}', { retry: { automatic: [], manual: { allowed: false, reason: null, permit_on_passed: false } }, soft_fail: false }],
      [
        'retry: {manual: {reason: "Deploys run once", permit_on_passed: true}}',
        { retry: { automatic: [], manual: { allowed: true, reason: 'Deploys run once', permit_on_passed: true } }, soft_fail: false },
      ],
      [
        'retry: {automatic: [{exit_status: [1, "2"], limit: 3}, {signal_reason: agent_stop}]}',
        {
          retry: {
            automatic: [
              { exit_status: [1, 2], limit: 3 },
              { exit_status: '*', limit: 2, signal_reason: 'agent_stop' },
            ],
          },
          soft_fail: false,
        },
      ],
      ['retry: {automatic: {exit_status: 255}}', { retry: { automatic: [{ exit_status: 255, limit: 2 }] }, soft_fail: false }],
      ['retry: {automatic: {limit: 10}}', { retry: { automatic: [{ exit_status: '*', limit: 10 }] }, soft_fail: false }],
      ['soft_fail: true', { retry: null, soft_fail: true }],
      ['soft_fail: false', { retry: null, soft_fail: false }],
      ['soft_fail: []', { retry: null, soft_fail: false }],
      ['soft_fail: [{exit_status: "2"}]', { retry: null, soft_fail: [{ exit_status: 2 }] }],
    ];
    for (const [property, expected] of cases) {
      const [step] = steps(yaml('steps:', `  - {command: x, ${property}}`));
      expect({ property, retry: (step as ScriptStep).retry, soft_fail: (step as ScriptStep).soft_fail }).toEqual({
        property,
        ...expected,
      });
    }
  });

  it('expands `<<` merge keys, letting the step override shared settings', () => {
    expect(
      steps(
        yaml(
          'defaults: &defaults',
          '  agents: {queue: default}',
          '  timeout_in_minutes: 10',
          '  env: &env {A: "1"}',
          'steps:',
          '  - <<: *defaults',
          '    command: a',
          '  - <<: *defaults',
          '    command: b',
          '    timeout_in_minutes: 20',
          '    env: *env',
        ),
      ),
    ).toEqual([
      script({ command: 'a', agent_query_rules: ['queue=default'], timeout_in_minutes: 10, env: { A: '1' } }),
      script({ command: 'b', agent_query_rules: ['queue=default'], timeout_in_minutes: 20, env: { A: '1' } }),
    ]);
  });

  it('keeps a `__proto__` variable as an ordinary variable', () => {
    const { env } = parseConfiguration(yaml('env: {__proto__: x, constructor: y}', 'steps: [wait]'));
    expect(Object.getPrototypeOf(env)).toBe(Object.prototype);
    expect(Object.keys(env)).toEqual(['__proto__', 'constructor']);
    expect(JSON.stringify(env)).toBe('{"__proto__":"x","constructor":"y"}');
  });

  it('keeps a block scalar command as written and joins a single-line list', () => {
    expect(steps(yaml('steps:', '  - command: |', '      echo one', '      echo two', '  - commands: [solo]'))).toEqual([
      script({ command: 'echo one\necho two\n' }),
      script({ command: 'solo' }),
    ]);
  });
});

describe('parseConfiguration: errors name the line', () => {
  it('reports a YAML syntax error with its line and column', () => {
    expect(codesOf(yaml('steps:', '  - command: make', '    env: [a', '  - wait'))).toEqual([
      expect.stringMatching(/^is not a valid YAML document: line 4, column \d+: \S/),
    ]);
    expect(codesOf('steps:\n  - command: "unterminated\n')).toEqual(['is not a valid YAML document: line 3, column 1: Missing closing "quote']);
  });

  it('reports a document without steps', () => {
    for (const doc of ['', '# only a comment\n', 'just text', '42', 'env: {A: b}\n', 'null']) {
      expect(codesOf(doc)).toEqual(['must contain a "steps" list']);
    }
  });

  it('reports empty steps and steps that are not a list, on the line of `steps`', () => {
    expect(codesOf(yaml('env: {}', 'steps: []'))).toEqual(['line 2: steps must not be empty']);
    expect(codesOf(yaml('env: {}', '', 'steps:'))).toEqual(['line 3: steps must not be empty']);
    expect(codesOf('[]')).toEqual(['line 1: steps must not be empty']);
    expect(codesOf(yaml('steps:', '  command: make'))).toEqual(['line 1: "steps" must be a list']);
  });

  it('reports an unknown step type on the line of the step', () => {
    expect(codesOf(yaml('steps:', '  - command: make', '', '  - script: make', '  - "echo hi"', '  - 7'))).toEqual([
      'step 2 (line 4) is not a known step type: expected one of command, commands, wait, block, input, trigger, group, plugins',
      'step 3 (line 5) is not a known step type: expected one of command, commands, wait, block, input, trigger, group, plugins',
      'step 4 (line 6) is not a known step type: expected one of command, commands, wait, block, input, trigger, group, plugins',
    ]);
  });

  it('reports a step that mixes two step types, or an explicit type that does not exist', () => {
    expect(codesOf(yaml('steps:', '  - command: make', '    trigger: deploy', '  - type: group'))).toEqual([
      'step 1 (line 2) mixes step types: "command" and "trigger" cannot be in the same step',
      'step 2 (line 4): "type" must be one of script, waiter, manual, trigger',
    ]);
  });

  it('collects every property error of every step, each on its own line', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - command: make',
          '    parallelism: 0',
          '    timeout_in_minutes: -5',
          '    env: [A=1]',
          '    agents: queue=deploy',
          '  - commands: {a: b}',
          '  - trigger: ~',
          '    label: Deploy',
          '  - trigger: "two words"',
          '  - command: x',
          '    concurrency: 2.5',
          '    retry: {automatic: {limit: 11}}',
          '    soft_fail: [{exit_status: sometimes}]',
          '    branches: {main: true}',
          '    continue_on_failure: true',
          '  - wait: [x]',
          '    continue_on_failure: "yes"',
          '  - command: x',
          '    env: {1BAD: x, GOOD: [1]}',
        ),
      ),
    ).toEqual([
      'step 1 (line 3): "parallelism" must be a whole number from 1 to 1000',
      'step 1 (line 4): "timeout_in_minutes" must be a positive whole number',
      'step 1 (line 5): "env" must be a mapping of names to values',
      'step 1 (line 6): "agents" must be a mapping or a list of key=value strings',
      // A mapping under `commands` is the nested form: its keys are the step's attributes.
      'step 2 (line 7): "a" is not an attribute of a command step',
      'step 2 (line 7): "command" can\'t be blank',
      'step 3 (line 8): "trigger" must name a pipeline slug',
      'step 4 (line 10): "trigger" must name a pipeline slug',
      'step 5 (line 12): "concurrency" must be a positive whole number',
      'step 5 (line 13): "retry.automatic.limit" must be a whole number from 0 to 10',
      'step 5 (line 14): "soft_fail[0].exit_status" must be a whole number or "*"',
      'step 5 (line 15): "branches" must be a string or a list of strings',
      'step 5 (line 16): "continue_on_failure" is not an attribute of a command step',
      'step 6 (line 17): "wait" must be empty or a label',
      'step 6 (line 18): "continue_on_failure" must be true or false',
      'step 7 (line 20): "env" has an invalid name "1BAD": use letters, digits and underscores, not starting with a digit',
      'step 7 (line 20): "env.GOOD" must be a string, number or boolean',
    ]);
  });

  it('reports a step with nothing to run, and `command` with `commands`', () => {
    expect(codesOf(yaml('steps:', '  - label: Nothing', '    command: ""', '  - command: a', '    commands: [b]', '  - commands: []'))).toEqual([
      'step 1 (line 3): "command" can\'t be blank',
      'step 2 (line 5): "commands" cannot be used together with "command"',
      'step 3 (line 6): "commands" can\'t be blank',
    ]);
  });

  it('reports bad block fields and trigger builds', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - block: Go',
          '    fields:',
          '      - text: Notes',
          '      - select: Env',
          '        key: env',
          '        options: [{label: A, value: a}]',
          '        default: b',
          '      - {key: env, text: Again}',
          '  - trigger: deploy',
          '    build: "main"',
          '  - trigger: deploy',
          '    async: 1',
          '    build: {env: {A: {nested: x}}}',
        ),
      ),
    ).toEqual([
      'step 1 (line 4): "fields[0].key" can\'t be blank',
      'step 1 (line 8): "fields[1].default" must be one of the option values',
      'step 1 (line 9): "fields[2].key" is already used by another field of this step',
      'step 2 (line 11): "build" must be a mapping of message, commit, branch, env and meta_data',
      'step 3 (line 13): "async" must be true or false',
      'step 3 (line 14): "build.env.A" must be a string, number or boolean',
    ]);
  });

  it('reports group problems: nesting, missing steps, and errors inside a group by position', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - group: Outer',
          '    steps:',
          '      - command: ok',
          '      - group: Inner',
          '        steps: [wait]',
          '      - command: x',
          '        parallelism: 5000',
          '  - group: Empty',
          '  - group: Bad',
          '    steps: wait',
        ),
      ),
    ).toEqual([
      'step 1.2 (line 5) is a group inside a group: groups cannot be nested',
      'step 1.3 (line 8): "parallelism" must be a whole number from 1 to 1000',
      'step 2 (line 9): "steps" must not be empty',
      'step 3 (line 11): "steps" must be a list',
    ]);
  });

  it('reports a key used by two steps', () => {
    expect(codesOf(yaml('steps:', '  - {command: a, key: build}', '  - wait', '  - {command: b, id: build}'))).toEqual([
      'step 3 (line 4): "key" "build" is already used by step 1',
    ]);
  });

  it('reports top-level env and agents problems', () => {
    expect(codesOf(yaml('env: [A=1]', 'agents: 5', 'steps: [wait]'))).toEqual([
      'line 1: "env" must be a mapping of names to values',
      'line 2: "agents" must be a mapping or a list of key=value strings',
    ]);
  });

  it('stops after 20 errors', () => {
    const doc = yaml('steps:', ...Array.from({ length: 50 }, () => '  - {command: x, parallelism: 0}'));
    expect(codesOf(doc)).toHaveLength(20);
  });

  it('reports duplicate keys, a second document and an alias without an anchor', () => {
    expect(codesOf(yaml('steps:', '  - command: a', '    command: b'))).toEqual(['is not a valid YAML document: line 3, column 5: Map keys must be unique']);
    expect(codesOf(yaml('steps: [wait]', '---', 'steps: [wait]'))).toEqual([
      'is not a valid YAML document: line 2, column 1: only one document is allowed, remove the "---" that starts another',
    ]);
    expect(codesOf(yaml('steps:', '  - *nowhere'))).toEqual(['is not a valid YAML document: line 2, column 5: alias *nowhere has no anchor before it']);
    expect(codesOf(yaml('steps:', '  - <<: [a, b]', '    command: x'))).toEqual([
      'is not a valid YAML document: line 2, column 5: "<<" must merge a mapping or a list of mappings',
    ]);
  });
});

describe('parseConfiguration: hostile input', () => {
  const laughs = [
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(',')}]`),
  ];

  // How long these take is measured by `npm run bench:configuration`, not asserted here.
  it('rejects a "billion laughs" alias bomb', () => {
    for (const tail of ['steps: *i', 'steps: [{command: x, env: *i, agents: *i}]']) {
      const codes = codesOf(yaml(...laughs, tail));
      expect(codes).toEqual([expect.stringMatching(/^is not a valid YAML document: line \d+, column \d+: aliases are expanded more than 2000 times$/)]);
    }
  });

  it('rejects an alias inside the anchor it names', () => {
    expect(codesOf(yaml('x: &a [1, *a]', 'steps: *a'))).toEqual(['is not a valid YAML document: line 1, column 11: alias *a is inside the anchor it names']);
    expect(codesOf(yaml('x: &a {<<: *a}', 'steps: [*a]'))).toEqual(['is not a valid YAML document: line 1, column 12: alias *a is inside the anchor it names']);
  });

  it('refuses a document of 12,000 aliases and reads one of 20,000 top-level keys', () => {
    const aliases = [
      `a: [${Array.from({ length: 12000 }, (_, i) => `&a${i} x`).join(',')}]`,
      `b: &b [${Array.from({ length: 12000 }, (_, i) => `*a${i}`).join(',')}]`,
      'steps: [{command: *b}]',
    ].join('\n');
    expect(codesOf(aliases)).toEqual([expect.stringMatching(/^is not a valid YAML document: line 2, column \d+: aliases are expanded more than 2000 times$/)]);
    // Undocumented top-level keys are anchor holders and the like: left alone.
    const keys = `${Array.from({ length: 20000 }, (_, i) => `k${i}: 1`).join('\n')}\nsteps: [wait]`;
    expect(parseConfiguration(keys)).toEqual({ steps: [{ type: 'waiter', continue_on_failure: false }], env: {}, notify: [], notices: [] });
  });

  it('rejects deep nesting, oversized documents and too many steps', () => {
    expect(codesOf(`steps: ${'['.repeat(20000)}`)).toEqual([
      expect.stringMatching(/^is not a valid YAML document: line 1, column \d+: it is nested too deeply$/),
    ]);
    expect(codesOf(`steps: [wait]\n#${'x'.repeat(256 * 1024)}`)).toEqual(['is too large (maximum is 262144 bytes)']);
    expect(codesOf(yaml('steps:', ...Array(501).fill('  - wait')))).toEqual(['has too many steps (maximum is 500)']);
    expect(steps(yaml('steps:', ...Array(500).fill('  - wait')))).toHaveLength(500);
  });

  // Each input either parses to the result stated or fails with the errors stated: never
  // anything but a ValidationError on the configuration field.
  const notAStep = (n: number) => `step ${n} (line 1) is not a known step type: expected one of command, commands, wait, block, input, trigger, group, plugins`;
  const hostile: { name: string; input: unknown; steps?: Step[]; codes?: (string | jest.AsymmetricMatcher)[] }[] = [
    ...[undefined, null, 42, {}, ['steps']].map((input) => ({ name: `not a string: ${JSON.stringify(input)}`, input, codes: ['must be a string'] })),
    { name: 'control characters', input: '\u0000\u0001', codes: ['must contain a "steps" list'] },
    {
      name: 'a byte order mark and a tab indent',
      input: '\uFEFFsteps: [wait]\n\t- bad',
      codes: ['is not a valid YAML document: line 2, column 1: Tabs are not allowed as indentation'],
    },
    {
      name: 'binary, set, omap and timestamp tags',
      input: 'steps: [!!binary aGVsbG8=, !!set {a, b}, !!omap [a: 1], !!timestamp 2001-12-14]',
      codes: [1, 2, 3, 4].map(notAStep),
    },
    {
      name: 'a complex key in a step',
      input: 'steps: [{? [a, b] : c, command: x}]',
      codes: ['step 1 (line 1): "[complex key]" is not an attribute of a command step'],
    },
    {
      name: 'a complex key in env',
      input: 'steps: [{command: x, env: {? {a: 1} : 2}}]',
      codes: ['step 1 (line 1): "env" has an invalid name "[complex key]": use letters, digits and underscores, not starting with a digit'],
    },
    {
      name: 'constructor and __proto__',
      input: 'steps: [{command: x, type: constructor}, {command: x, __proto__: {parallelism: 0}}]',
      codes: ['step 1 (line 1): "type" must be one of script, waiter, manual, trigger', 'step 2 (line 1): "__proto__" is not an attribute of a command step'],
    },
    {
      name: 'infinite and not-a-number values',
      input: 'steps: [{command: .inf, parallelism: .nan, timeout_in_minutes: 1e400}]',
      codes: ['step 1 (line 1): "timeout_in_minutes" must be a positive whole number', 'step 1 (line 1): "parallelism" must be a whole number from 1 to 1000'],
    },
    { name: 'an unknown YAML version', input: '%YAML 9.9\n---\nsteps: [wait]', steps: [{ type: 'waiter', continue_on_failure: false }] },
    {
      name: '5,000 nested block sequences on one line',
      input: '- '.repeat(5000) + 'x',
      codes: [expect.stringMatching(/^is not a valid YAML document: line 1, column \d+: it is nested too deeply$/)],
    },
    {
      name: '300 nested block sequences on their own lines',
      input: 'steps:\n' + Array.from({ length: 300 }, (_, i) => `${' '.repeat(i + 2)}- `).join('\n') + 'x',
      codes: ['step 1 (line 3) is not a known step type: expected one of command, commands, wait, block, input, trigger, group, plugins'],
    },
    {
      name: 'groups nested three deep',
      input: 'steps: [{group: g, steps: [{group: h, steps: [{group: i}]}]}]',
      codes: ['step 1.1 (line 1) is a group inside a group: groups cannot be nested'],
    },
    {
      name: 'block fields of every wrong shape',
      input: 'steps: [{block: Go, fields: [{select: S, key: k, options: [[], {}, {label: [x]}]}, 5, {key: k, text: [x]}]}]',
      codes: [
        'step 1 (line 1): "fields[0].options[0]" must be a mapping with "label" and "value"',
        'step 1 (line 1): "fields[0].options[1].label" can\'t be blank',
        'step 1 (line 1): "fields[0].options[1].value" can\'t be blank',
        'step 1 (line 1): "fields[0].options[2].label" must be a string',
        'step 1 (line 1): "fields[0].options[2].label" can\'t be blank',
        'step 1 (line 1): "fields[0].options[2].value" can\'t be blank',
        'step 1 (line 1): "fields[1]" must be a mapping with "key" and "text" or "select"',
        'step 1 (line 1): "fields[2].key" is already used by another field of this step',
        'step 1 (line 1): "fields[2].text" must be a string',
        'step 1 (line 1): "fields[2]" must have exactly one of "text" or "select"',
      ],
    },
  ];
  it.each(hostile)('answers $name with a stated result or ValidationError', ({ input, steps: expected, codes }) => {
    if (expected) expect(steps(input as string)).toEqual(expected);
    else expect(codesOf(input as string)).toEqual(codes);
  });
});

describe('normaliseVisualSteps', () => {
  it('normalises one step of each type, filling defaults and dropping unknown properties', () => {
    expect(
      normaliseVisualSteps([
        {
          type: 'script',
          name: 'Build',
          command: 'make',
          artifact_paths: 'pkg/*',
          branch_configuration: 'main',
          env: { A: 1, B: true, C: 'c' },
          timeout_in_minutes: 60,
          agent_query_rules: ['queue=default'],
          concurrency: 2,
          parallelism: 3,
          key: 'build',
          soft_fail: [{ exit_status: 1 }],
          retry: { automatic: [{ exit_status: '*', limit: 2 }] },
          id: 'server-owned',
          label: 'not the name of a script step',
        },
        { type: 'waiter' },
        { type: 'waiter', continue_on_failure: true },
        { type: 'manual', label: 'Deploy?', prompt: 'Sure?', fields: [{ key: 'why', text: 'Why?' }] },
        { type: 'trigger', trigger_project_slug: 'deploy' },
        {
          type: 'trigger',
          label: 'Deploy',
          trigger_project_slug: 'deploy',
          trigger_commit: 'abc',
          trigger_branch: 'main',
          trigger_message: 'Go',
          trigger_env: { A: 'b' },
          trigger_async: true,
          branch_configuration: 'main',
        },
        { type: 'script', command: null },
      ]),
    ).toEqual([
      {
        type: 'script',
        name: 'Build',
        command: 'make',
        artifact_paths: 'pkg/*',
        branch_configuration: 'main',
        env: { A: '1', B: 'true', C: 'c' },
        timeout_in_minutes: 60,
        agent_query_rules: ['queue=default'],
        concurrency: 2,
        parallelism: 3,
        key: 'build',
        soft_fail: [{ exit_status: 1 }],
        retry: { automatic: [{ exit_status: '*', limit: 2 }] },
      },
      { type: 'waiter', continue_on_failure: false },
      { type: 'waiter', continue_on_failure: true },
      { type: 'manual', label: 'Deploy?', prompt: 'Sure?', fields: [{ key: 'why', text: 'Why?' }], branch_configuration: null },
      trigger('deploy'),
      {
        type: 'trigger',
        name: 'Deploy',
        trigger_project_slug: 'deploy',
        trigger_commit: 'abc',
        trigger_branch: 'main',
        trigger_message: 'Go',
        trigger_env: { A: 'b' },
        trigger_meta_data: {},
        trigger_async: true,
        branch_configuration: 'main',
      },
      script({}),
    ]);
  });

  it('returns what the YAML form of the same steps returns', () => {
    const fromYaml = steps(yaml('steps:', '  - {label: Build, command: make, agents: [queue=x]}', '  - wait', '  - trigger: deploy'));
    expect(normaliseVisualSteps(JSON.parse(JSON.stringify(fromYaml)))).toEqual(fromYaml);
  });

  it('reports an empty list, too many steps and a value that is not a list', () => {
    expect(errorsOf(() => normaliseVisualSteps([]))).toEqual([{ field: 'steps', code: "can't be blank" }]);
    expect(errorsOf(() => normaliseVisualSteps(Array(501).fill({ type: 'waiter' })))).toEqual([{ field: 'steps', code: 'is too long (maximum is 500 steps)' }]);
    expect(errorsOf(() => normaliseVisualSteps({ type: 'waiter' } as unknown as unknown[]))).toEqual([{ field: 'steps', code: 'must be a list of steps' }]);
  });

  it('names the field at fault in each step', () => {
    expect(
      errorsOf(() =>
        normaliseVisualSteps([
          { command: 'make' },
          { type: 'command', command: 'make' },
          'wait',
          { type: 'trigger', name: 'Deploy' },
          { type: 'manual', label: '  ' },
          {
            type: 'script',
            command: ['make'],
            parallelism: 1001,
            timeout_in_minutes: 1.5,
            agent_query_rules: { queue: 'x' },
            env: { 'BAD-NAME': 'x' },
            soft_fail: 'sometimes',
            retry: { automatic: [{ exit_status: 'x' }] },
          },
          { type: 'waiter', continue_on_failure: 'true' },
          { type: 'trigger', trigger_project_slug: 'a/b', trigger_env: [], trigger_async: 1 },
          { type: 'manual', label: 'Go', fields: [{ key: 'k' }, { key: 'k2', select: 'S' }] },
        ]),
      ),
    ).toEqual([
      { field: 'steps[0].type', code: "can't be blank" },
      { field: 'steps[1].type', code: 'is not included in the list' },
      { field: 'steps[2]', code: 'must be an object' },
      { field: 'steps[3].trigger_project_slug', code: "can't be blank" },
      { field: 'steps[4].label', code: "can't be blank" },
      { field: 'steps[5].command', code: 'must be a string' },
      { field: 'steps[5].env', code: 'has an invalid name "BAD-NAME": use letters, digits and underscores, not starting with a digit' },
      { field: 'steps[5].timeout_in_minutes', code: 'must be a positive whole number' },
      { field: 'steps[5].agent_query_rules', code: 'must be a list of key=value strings' },
      { field: 'steps[5].parallelism', code: 'must be a whole number from 1 to 1000' },
      { field: 'steps[5].soft_fail', code: 'must be true, false or a list of exit_status rules' },
      { field: 'steps[5].retry.automatic[0].exit_status', code: 'must be a whole number or "*"' },
      { field: 'steps[6].continue_on_failure', code: 'must be true or false' },
      { field: 'steps[7].trigger_project_slug', code: 'must name a pipeline slug' },
      { field: 'steps[7].trigger_env', code: 'must be an object of names to values' },
      { field: 'steps[7].trigger_async', code: 'must be true or false' },
      { field: 'steps[8].fields[0]', code: 'must have exactly one of "text" or "select"' },
      { field: 'steps[8].fields[1].options', code: 'must be a non-empty list of {label, value}' },
    ]);
  });

  it('reports a key used by two steps', () => {
    expect(
      errorsOf(() =>
        normaliseVisualSteps([
          { type: 'script', command: 'a', key: 'k' },
          { type: 'script', command: 'b', key: 'k' },
        ]),
      ),
    ).toEqual([{ field: 'steps[1].key', code: 'has already been taken by another step' }]);
  });

  // Each input either normalises to the steps stated or fails with the errors stated.
  let deep: unknown = 'x';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const hostile: { name: string; input: unknown; steps?: Step[]; errors?: FieldError[] }[] = [
    ...[null, undefined, 'steps'].map((input) => ({
      name: `not a list: ${String(input)}`,
      input,
      errors: [{ field: 'steps', code: 'must be a list of steps' }],
    })),
    {
      name: 'items that are not objects',
      input: [null, undefined, 1, 'x', [], true],
      errors: [0, 1, 2, 3, 4, 5].map((i) => ({ field: `steps[${i}]`, code: 'must be an object' })),
    },
    {
      name: 'values nested 100,000 deep',
      input: [{ type: 'script', command: deep, env: deep, retry: deep }],
      errors: [
        { field: 'steps[0].command', code: 'must be a string' },
        { field: 'steps[0].env', code: 'must be an object of names to values' },
        { field: 'steps[0].retry', code: 'must be an object with "automatic" and/or "manual" rules' },
      ],
    },
    {
      name: 'types named after Object.prototype',
      input: [{ type: '__proto__' }, { type: 'constructor' }, { type: 'toString' }],
      errors: [0, 1, 2].map((i) => ({ field: `steps[${i}].type`, code: 'is not included in the list' })),
    },
    {
      name: '__proto__ as an own property of the step and of env',
      input: [JSON.parse('{"type":"script","command":"x","__proto__":{"parallelism":0},"env":{"__proto__":"y"}}')],
      steps: [script({ command: 'x', env: JSON.parse('{"__proto__":"y"}') as Record<string, string> })],
    },
    {
      name: 'a symbol, a bigint and a function',
      input: [{ type: 'script', command: Symbol('x'), parallelism: 10n, env: { A: () => 1 } }],
      errors: [
        { field: 'steps[0].command', code: 'must be a string' },
        { field: 'steps[0].env.A', code: 'must be a string, number or boolean' },
        { field: 'steps[0].parallelism', code: 'must be a whole number from 1 to 1000' },
      ],
    },
    {
      name: 'a getter that throws',
      input: [
        {
          type: 'script',
          get command(): string {
            throw new Error('boom');
          },
        },
      ],
      errors: [{ field: 'steps', code: 'could not be read: it may be too large or nested too deeply' }],
    },
    {
      name: 'an env of 300,000 variables',
      input: [{ type: 'script', command: 'x', env: Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`A${i}`, 'v'])) }],
      errors: [{ field: 'steps[0].env', code: 'must have at most 200 variables' }],
    },
    {
      name: 'a select default nested 100,000 deep',
      input: [{ type: 'manual', label: 'x', fields: [{ key: 'k', select: 's', options: [{ label: 1, value: 2 }], default: deep }] }],
      errors: [{ field: 'steps[0].fields[0].default', code: 'must be one of the option values' }],
    },
  ];
  it.each(hostile)('answers $name with a stated result or ValidationError', ({ input, steps: expected, errors }) => {
    if (expected) expect(normaliseVisualSteps(input as unknown[])).toEqual(expected);
    else expect(errorsOf(() => normaliseVisualSteps(input as unknown[]))).toEqual(errors);
  });
});
