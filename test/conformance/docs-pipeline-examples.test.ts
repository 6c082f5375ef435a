/**
 * Every pipeline.yml example of the Buildkite docs (test/fixtures/docs-pipeline-examples.json,
 * copied from the docs' pages) is a pipeline Windsock takes: the configuration parser reads each
 * without a problem, but for the ones listed below, each with the reason it is not a whole
 * pipeline Windsock should take. A docs example that Windsock refuses is a defect to fix, or a
 * decision to write down here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { errorsOf } from '../support/configuration';
import { parseConfiguration } from '../../src/pipelines/configuration';

interface Example {
  source: string;
  yaml: string;
}
const { examples } = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/docs-pipeline-examples.json'), 'utf8')) as { examples: Example[] };

/** A fragment of a pipeline the page shows beside a whole one: a top-level `notify`, `checkout` or `matrix` alone. */
const FRAGMENT = ['must contain a "steps" list'];

/** The examples Windsock refuses, by source, with the problems it reports and why that is right. */
const REFUSED: Record<string, { codes: string[]; why: string }> = {
  ...Object.fromEntries(
    [
      'pages/pipelines/configure/conditionals.md:92',
      'pages/pipelines/configure/git_checkout.md:370',
      'pages/pipelines/configure/git_checkout.md:379',
      'pages/pipelines/configure/git_checkout.md:388',
      'pages/pipelines/configure/git_checkout.md:397',
      'pages/pipelines/configure/git_checkout.md:406',
      'pages/pipelines/configure/notify.md:157',
      'pages/pipelines/configure/notify.md:169',
      'pages/pipelines/configure/notify.md:460',
      'pages/pipelines/configure/notify.md:485',
      'pages/pipelines/configure/notify.md:544',
      'pages/pipelines/configure/notify.md:601',
      'pages/pipelines/configure/notify.md:634',
      'pages/pipelines/configure/notify.md:674',
      'pages/pipelines/configure/notify.md:704',
      'pages/pipelines/configure/notify.md:743',
      'pages/pipelines/configure/notify.md:762',
      'pages/pipelines/configure/notify.md:780',
      'pages/pipelines/configure/notify.md:789',
      'pages/pipelines/configure/notify.md:798',
      'pages/pipelines/configure/workflows/build_matrix.md:110',
      'pages/pipelines/configure/workflows/build_matrix.md:126',
      'pages/pipelines/integrations/notifications/slack_workspace.md:40',
      'pages/pipelines/integrations/notifications/slack_workspace.md:58',
      'pages/pipelines/integrations/notifications/slack_workspace.md:70',
      'pages/pipelines/integrations/notifications/slack_workspace.md:134',
      'pages/pipelines/integrations/notifications/slack_workspace.md:268',
      'pages/pipelines/integrations/notifications/slack_workspace.md:287',
      'pages/pipelines/integrations/notifications/slack_workspace.md:301',
    ].map((source) => [source, { codes: FRAGMENT, why: 'a fragment: the page shows one attribute, not a pipeline' }]),
  ),
  'pages/pipelines/configure/soft_fail.md:99': {
    codes: ['step 1 (line 8): "adjustments" is not an attribute of a command step'],
    why: "the build matrix page, the reference for matrices, puts `adjustments` under `matrix`; this page's example has it beside `matrix`",
  },
  'pages/pipelines/tutorials/pipeline_upgrade.md:38': {
    codes: ['line 4: "steps" must be a list'],
    why: 'the page shows how env precedence changed, with `steps` as one mapping; every step reference says a list',
  },
};

describe("the docs' pipeline.yml examples", () => {
  it('are all there', () => {
    expect(examples.length).toBeGreaterThan(240);
    for (const source of Object.keys(REFUSED)) expect(examples.map((e) => e.source)).toContain(source);
  });

  it.each(examples.map((e) => [e.source, e] as const))('%s', (source, example) => {
    const refused = REFUSED[source];
    if (refused) {
      expect(errorsOf(() => parseConfiguration(example.yaml)).map((e) => e.code)).toEqual(refused.codes);
      return;
    }
    expect(() => parseConfiguration(example.yaml)).not.toThrow();
  });
});
