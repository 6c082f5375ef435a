/**
 * Build matrices, step priority, plugins and the attribute catalogue, at the parser and the
 * planner (no HTTP; test/builds/matrix.test.ts goes through the REST and agent APIs).
 */
import { ValidationError } from '../../src/core/errors';
import { codesOf, yaml } from '../support/configuration';
import { planJobs, scriptVariants, type PlanContext } from '../../src/builds/jobs/plan';
import { normaliseVisualSteps, parseConfiguration, type ScriptStep } from '../../src/pipelines/configuration';
import { combinations, jobCount, MATRIX_LIMITS } from '../../src/pipelines/configuration/matrix';
import { STEP_ATTRIBUTES } from '../../src/pipelines/configuration/step-attributes';

const onlyStep = (text: string) => parseConfiguration(text).steps[0] as ScriptStep;

const plan = (text: string) => {
  const parsed = parseConfiguration(text);
  const ctx: PlanContext = {
    branch: 'main',
    pipelineEnv: parsed.env,
    buildEnv: {},
    repositoryUrl: 'git@example.com:a/b.git',
    sign: (fields) => ({ value: JSON.stringify(fields), algorithm: 'test', signed_fields: Object.keys(fields) }),
    conditions: new Map(),
  };
  return planJobs(parsed.steps, ctx);
};

describe('matrix: the single-dimension list form', () => {
  it('makes one job per value, with {{matrix}} in label, command, env and agents', () => {
    const jobs = plan(
      yaml(
        'steps:',
        '  - label: "{{matrix}} build"',
        '    command: "GOOS={{matrix}} go build"',
        '    env:',
        '      os: "{{ matrix }}"',
        '    agents:',
        '      queue: "builder-{{matrix}}"',
        '    matrix: [darwin, linux, 7]',
      ),
    );
    expect(jobs.map((j) => [j.name, j.command, j.env.os, j.agentQueryRules, j.step.type === 'script' && j.step.matrix_values])).toEqual([
      ['darwin build', 'GOOS=darwin go build', 'darwin', ['queue=builder-darwin'], { '': 'darwin' }],
      ['linux build', 'GOOS=linux go build', 'linux', ['queue=builder-linux'], { '': 'linux' }],
      ['7 build', 'GOOS=7 go build', '7', ['queue=builder-7'], { '': '7' }],
    ]);
    // One step: the jobs share its id, each carries its own signature over its own fields.
    expect(new Set(jobs.map((j) => j.stepId)).size).toBe(1);
    expect(new Set(jobs.map((j) => j.signature?.value)).size).toBe(3);
  });

  it('reads the same matrix, priority and plugins from the visual steps of the REST API', () => {
    const [step] = normaliseVisualSteps([{ type: 'script', command: 'echo {{matrix}}', matrix: ['a', 'b'], priority: 4, plugins: ['x#v1'] }]) as ScriptStep[];
    expect([step!.matrix, step!.priority, step!.plugins]).toEqual([{ setup: { '': ['a', 'b'] }, adjustments: [] }, 4, [{ 'x#v1': null }]]);
    expect(() => normaliseVisualSteps([{ type: 'script', command: 'x', matrix: Array.from({ length: 26 }, (_, i) => i) }])).toThrow(ValidationError);
  });

  it('keeps the matrix on the stored step, so the pipeline shows one step', () => {
    const step = onlyStep(yaml('steps:', '  - command: "echo {{matrix}}"', '    matrix: [a, b]'));
    expect(step.matrix).toEqual({ setup: { '': ['a', 'b'] }, adjustments: [] });
    expect(step.command).toBe('echo {{matrix}}');
  });
});

describe('matrix: setup and adjustments', () => {
  const docsExample = yaml(
    'steps:',
    '  - label: "💥 Matrix build with adjustments"',
    '    command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"',
    '    soft_fail: false',
    '    matrix:',
    '      setup:',
    '        arch: [amd64, arm64]',
    '        os: [windows, linux]',
    '        test: [A, B]',
    '      adjustments:',
    '        - with: {os: windows, arch: arm64, test: B}',
    '          soft_fail: true',
    '        - with: {os: linux, arch: arm64, test: B}',
    '          skip: true',
    '        - with: {os: "Plan 9", arch: arm64, test: B}',
    '        - with: {os: linux, arch: amd64, test: A}',
    '          soft_fail: [{exit_status: 3}]',
  );

  it('multiplies the dimensions, skips, soft-fails and adds combinations as documented (2*2*2 - 1 + 1 = 8)', () => {
    const jobs = plan(docsExample);
    expect(jobs.map((j) => j.command)).toEqual([
      'echo windows amd64 A',
      'echo windows amd64 B',
      'echo linux amd64 A',
      'echo linux amd64 B',
      'echo windows arm64 A',
      'echo windows arm64 B',
      'echo linux arm64 A',
      'echo Plan 9 arm64 B',
    ]);
    const softFail = Object.fromEntries(jobs.map((j) => [j.command, j.step.type === 'script' ? j.step.soft_fail : null]));
    expect(softFail['echo windows arm64 B']).toBe(true);
    expect(softFail['echo linux amd64 A']).toEqual([{ exit_status: 3 }]);
    expect(softFail['echo windows amd64 A']).toBe(false);
    // The job's copy of the step is the combination, not the template.
    const first = jobs[0]!.step as ScriptStep;
    expect(first.matrix).toBeUndefined();
    expect(first.matrix_values).toEqual({ arch: 'amd64', os: 'windows', test: 'A' });
  });

  it('counts jobs without expanding them', () => {
    const step = onlyStep(docsExample);
    expect(jobCount(step.matrix!)).toBe(8);
    expect(combinations(step.matrix!)).toHaveLength(8);
  });

  it('takes the list form of setup, with a scalar or one-value list in `with` and a skip reason', () => {
    const step = onlyStep(
      yaml(
        'steps:',
        '  - command: "echo {{matrix}}"',
        '    matrix:',
        '      setup: [one, two]',
        '      adjustments:',
        '        - with: [three]',
        '        - with: one',
        '          skip: "look, hexagons are just better"',
      ),
    );
    expect(scriptVariants(step).map((s) => s.command)).toEqual(['echo two', 'echo three']);
  });

  it('interpolates plugins, and hands plugins to the agent as BUILDKITE_PLUGINS', () => {
    const [job] = plan(
      yaml(
        'steps:',
        '  - plugins:',
        '      - docker#v5.0.0:',
        '          image: "node:{{matrix.node}}"',
        '          propagate-environment: true',
        '      - "artifacts#v1.9.0"',
        '    matrix:',
        '      setup:',
        '        node: [20]',
      ),
    );
    expect(JSON.parse(job!.env.BUILDKITE_PLUGINS!)).toEqual([
      { 'docker#v5.0.0': { image: 'node:20', 'propagate-environment': true } },
      { 'artifacts#v1.9.0': null },
    ]);
  });
});

describe('matrix: what is refused, with the field and the limit', () => {
  const dims = (n: number) => Array.from({ length: n }, (_, i) => `        d${i}: [a]`);
  const values = (n: number) => `[${Array.from({ length: n }, (_, i) => `v${i}`).join(', ')}]`;

  it.each([
    [
      `${MATRIX_LIMITS.dimensions + 1} dimensions`,
      yaml('steps:', '  - command: x', '    matrix:', '      setup:', ...dims(7)),
      'has 7 dimensions: a matrix has at most 6',
    ],
    ['26 elements', yaml('steps:', '  - command: x', `    matrix: ${values(26)}`), 'has 26 elements: a dimension has at most 25'],
    ['an element over 128 bytes', yaml('steps:', '  - command: x', `    matrix: [ok, ${'é'.repeat(65)}]`), 'is too long (maximum is 128 bytes)'],
    [
      'a dimension name over 128 bytes',
      yaml('steps:', '  - command: x', '    matrix:', '      setup:', `        ${'d'.repeat(129)}: [a]`),
      'has an invalid dimension name',
    ],
    [
      '13 adjustments',
      yaml(
        'steps:',
        '  - command: x',
        '    matrix:',
        '      setup: [a]',
        '      adjustments:',
        ...Array.from({ length: 13 }, (_, i) => `        - with: n${i}`),
      ),
      'has 13 adjustments: a matrix has at most 12',
    ],
    [
      '51 jobs',
      yaml('steps:', '  - command: x', '    matrix:', '      setup:', `        a: ${values(17)}`, `        b: ${values(3)}`),
      'would create 51 jobs: a matrix creates at most 50',
    ],
    [
      '100x100',
      yaml('steps:', '  - command: x', '    matrix:', '      setup:', `        a: ${values(100)}`, `        b: ${values(100)}`),
      'has 100 elements: a dimension has at most 25',
    ],
  ])('refuses %s', (_name, text, message) => {
    expect(codesOf(text).join('\n')).toContain(message);
  });

  it('allows exactly the limits (6 dimensions, 25 elements of 128 bytes, 50 jobs)', () => {
    expect(combinations(onlyStep(yaml('steps:', '  - command: x', '    matrix:', '      setup:', ...dims(6))).matrix!)).toHaveLength(1);
    expect(combinations(onlyStep(yaml('steps:', '  - command: x', `    matrix: ${values(25)}`)).matrix!)).toHaveLength(25);
    expect(combinations(onlyStep(yaml('steps:', '  - command: x', `    matrix: [${'é'.repeat(64)}]`)).matrix!)).toHaveLength(1);
    const fifty = onlyStep(yaml('steps:', '  - command: x', '    matrix:', '      setup:', `        a: ${values(10)}`, `        b: ${values(5)}`));
    expect(jobCount(fifty.matrix!)).toBe(50);
  });

  it('names the attribute at fault in each mistake', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - command: "echo {{matrix.os}} {{matrix.cpu}}"',
          '    parallelism: 2',
          '    matrix:',
          '      setup:',
          '        os: [linux, linux]',
          '        bad-name: [x]',
          '      adjustments:',
          '        - with: {os: linux}',
          '        - with: {os: linux, arch: x}',
          '          skip: 5',
          '      extra: 1',
          '  - command: "echo {{matrix}}"',
          '    matrix: {setup: {os: [a]}}',
          '  - command: x',
          '    matrix: "a b"',
          '  - command: x',
          '    matrix: {setup: [a], adjustments: [{with: a, skip: true}]}',
        ),
      ),
    ).toEqual([
      'step 1 (line 3): "parallelism" cannot be used together with "matrix": put them on separate steps',
      'step 1 (line 6): "matrix.setup.os[1]" repeats "linux"',
      'step 1 (line 7): "matrix.setup" has an invalid dimension name "bad-name": use letters, digits and underscores',
      'step 1 (line 12): "matrix.extra" is not a matrix attribute: use "setup" and "adjustments"',
      'step 2 (line 13): "command" uses {{matrix}}, but the matrix has no such dimension (it has {{matrix.os}})',
      'step 3 (line 16): "matrix" must be a list of values, or a mapping with "setup" and optional "adjustments"',
      'step 4 (line 18): "matrix" skips every combination: a matrix must create at least one job',
    ]);
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - command: x',
          '    matrix:',
          '      setup: {os: [a], arch: [b]}',
          '      adjustments:',
          '        - with: {os: a}',
          '        - with: {os: a, arch: b, cpu: c}',
          '          skip: 5',
        ),
      ),
    ).toEqual([
      'step 1 (line 6): "matrix.adjustments[0].with" must give a value for every dimension: "arch" is missing',
      'step 1 (line 7): "matrix.adjustments[1].with" names "cpu", which is not a dimension of the matrix (os, arch)',
      'step 1 (line 8): "matrix.adjustments[1].skip" must be true, false or a reason',
    ]);
  });

  it('refuses a token naming no dimension of a valid matrix', () => {
    expect(
      codesOf(
        yaml('steps:', '  - label: "{{matrix.os}}"', '    command: "echo {{matrix.cpu}}"', '    env: {A: "{{matrix}}"}', '    matrix: {setup: {os: [a]}}'),
      ),
    ).toEqual([
      'step 1 (line 3): "command" uses {{matrix.cpu}}, but the matrix has no such dimension (it has {{matrix.os}})',
      'step 1 (line 4): "env.A" uses {{matrix}}, but the matrix has no such dimension (it has {{matrix.os}})',
    ]);
  });

  it('leaves {{matrix}} alone in a step without a matrix', () => {
    expect(plan(yaml('steps:', '  - command: "echo {{matrix}}"')).map((j) => j.command)).toEqual(['echo {{matrix}}']);
  });
});

describe('priority', () => {
  it('is the step’s, else the top-level one, else 0; only command jobs have one', () => {
    const jobs = plan(
      yaml(
        'priority: 5',
        'steps:',
        '  - command: a',
        '  - command: b',
        '    priority: -2',
        '  - wait',
        '  - command: c',
        '    matrix: [x, y]',
        '    priority: 9',
        '  - block: ok',
      ),
    );
    expect(jobs.map((j) => [j.type, j.priority])).toEqual([
      ['script', 5],
      ['script', -2],
      ['waiter', 0],
      ['script', 9],
      ['script', 9],
      ['manual', 0],
    ]);
    expect(plan(yaml('steps:', '  - command: a')).map((j) => j.priority)).toEqual([0]);
  });

  it('refuses what is not a whole number', () => {
    expect(codesOf(yaml('priority: high', 'steps:', '  - command: a', '    priority: 1.5'))).toEqual([
      'line 1: "priority" must be a whole number from -2147483647 to 2147483647',
      'step 1 (line 4): "priority" must be a whole number from -2147483647 to 2147483647',
    ]);
  });
});

describe('step attributes: nothing is dropped without a word', () => {
  it('reports the documented attributes it accepts without acting on them', () => {
    const parsed = parseConfiguration(
      yaml(
        'notify: [{email: dev@example.com}]',
        'steps:',
        '  - command: a',
        '    notify: [{slack: "#ci"}]',
        '    concurrency: 1',
        '    concurrency_group: deploy',
        '    cancel_on_build_failing: true',
        '    image: node:20',
        '  - group: Tests',
        '    notify: [{github_check: {context: tests}}]',
        '    steps:',
        '      - command: b',
        '  - wait: ~',
        '    key: barrier',
      ),
    );
    expect(parsed.notices).toEqual([
      'step 1: "image" is accepted but not acted on: the image is not passed to the agent (BUILDKITE_IMAGE)',
      'step 2: "notify" is accepted but not acted on: a group\'s notifications are not kept: put them on its command steps or the top level',
    ]);
  });

  it('refuses undocumented step keys and values it cannot read, naming each', () => {
    expect(
      codesOf(
        yaml(
          'env: { TOKEN: x }',
          'steps:',
          '  - command: a',
          '    key: build',
          '    if: build.branch ==',
          '    skip: broken',
          '    colour: blue',
          '  - trigger: deploy',
          '    soft_fail: 1',
          '  - wait: ~',
          '    colour: red',
          '  - group: g',
          '    skip: [yes]',
          '    steps: [{command: b}]',
          '  - block: Go',
          '    depends_on: [a]',
          '    unknown_thing: 1',
        ),
      ),
    ).toEqual([
      'step 1 (line 5): "if" is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but the condition ended at character 16',
      'step 1 (line 7): "colour" is not an attribute of a command step',
      'step 2 (line 9): "soft_fail" must be true or false',
      'step 3 (line 11): "colour" is not an attribute of a wait step',
      'step 4 (line 13): "skip" must be true, false or a reason',
      'step 5 (line 17): "unknown_thing" is not an attribute of a block step',
    ]);
  });

  it('accepts the documented aliases artifacts and timeout, and values that ask for the default (null, false, an empty skip reason; `depends_on: ~` is "nothing")', () => {
    const parsed = parseConfiguration(
      yaml(
        'steps:',
        '  - command: a',
        '    artifacts: "a/*"',
        '    timeout: 5',
        '    depends_on: ~',
        '    if: ~',
        '    skip: ""',
        '    cancel_on_build_failing: false',
        '  - command: b',
        '    skip: false',
        '    allow_dependency_failure: false',
      ),
    );
    const step = parsed.steps[0] as ScriptStep;
    expect([step.artifact_paths, step.timeout_in_minutes, step.depends_on]).toEqual(['a/*', 5, []]);
    expect(parsed.notices).toEqual([]);
    expect([parsed.steps[0]!, parsed.steps[1]!].map((s) => 'skip' in s)).toEqual([false, false]);
    expect(codesOf(yaml('steps:', '  - command: a', '    skip: true', '    colour: false'))).toEqual([
      'step 1 (line 4): "colour" is not an attribute of a command step',
    ]);
  });

  it('catalogues the six step types', () => {
    expect(Object.keys(STEP_ATTRIBUTES)).toEqual(['command', 'wait', 'block', 'input', 'trigger', 'group']);
  });
});
