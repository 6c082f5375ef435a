/**
 * A pipeline's settings and its steps. The settings form (for those who may edit the pipeline:
 * the `updatePipeline` scope and the pipeline's `edit` permission) changes the name, description,
 * repository, default branch, branch filter and the steps' YAML through the pipelines service's
 * `update`, the one path the REST route takes, so the web accepts and refuses exactly what the
 * API does; a refusal shows the form again with each error beside its field (a YAML error names
 * its step and line). The steps view shows the same steps read-only to anyone who may read the
 * pipeline. Both show the status badge with its Markdown to copy.
 */
import crypto from 'node:crypto';
import YAML from 'yaml';
import type { Pipeline } from '../../pipelines/repository';
import { ConflictError, ForbiddenError } from '../../core/errors';
import { actorFor } from '../context';
import { html, type Html, type Part } from '../html';
import { can } from '../permissions';
import type { WebRouter } from '../routes';
import { csrfField, layout, notice, type PageContext } from '../ui';
import { checkboxField, checked, formField, formProblems, freshForm, submitOrShowAgain, textField, type FormState } from './forms';

/** The form's fields, named as the API's request names them (so its `errors` land beside them). */
const FIELDS = [
  'name',
  'description',
  'repository',
  'default_branch',
  'branch_configuration',
  'skip_queued_branch_builds',
  'skip_queued_branch_builds_filter',
  'cancel_running_branch_builds',
  'cancel_running_branch_builds_filter',
  'configuration',
] as const;

/** The steps as YAML: the pipeline's own configuration, or its visual steps (and env) written as YAML. */
export function stepsYaml(p: Pick<Pipeline, 'configuration' | 'steps' | 'env'>): string {
  if (p.configuration !== null) return p.configuration;
  const doc: Record<string, unknown> = {};
  if (Object.keys(p.env).length) doc.env = p.env;
  doc.steps = p.steps;
  return YAML.stringify(doc);
}

/**
 * What the settings form showed of the pipeline, as a digest the form carries back: a post made
 * from a form shown before the pipeline changed (through the API, another tab, another person)
 * is refused rather than writing what that form showed over the newer settings.
 */
export function settingsVersion(p: Pipeline): string {
  const shown = [
    p.name,
    p.description,
    p.repository,
    p.defaultBranch,
    p.branchConfiguration,
    p.skipQueuedBranchBuilds,
    p.skipQueuedBranchBuildsFilter,
    p.cancelRunningBranchBuilds,
    p.cancelRunningBranchBuildsFilter,
    stepsYaml(p),
  ];
  return crypto.createHash('sha256').update(JSON.stringify(shown)).digest('base64url').slice(0, 22);
}

/** The badge's image (same origin: the pages' CSP allows no other) and the Markdown that shows it, linked to the pipeline. */
function badgeSection(badgeUrl: string, pipelineUrl: string, name: string): Html {
  const markdown = `[![Build status](${badgeUrl})](${pipelineUrl})`;
  return html`<section aria-labelledby="badge-heading">
    <h2 id="badge-heading">Status badge</h2>
    <p><img src="${new URL(badgeUrl).pathname}" alt="Build status of ${name}" /></p>
    <label for="badge-markdown">Markdown</label>
    <p class="hint" id="badge-markdown-hint">Paste it into a README. Anyone with the URL can see the badge.</p>
    <div class="copyable">
      <input type="text" id="badge-markdown" value="${markdown}" readonly aria-describedby="badge-markdown-hint" class="code" />
      <button type="button" class="secondary" data-copy="badge-markdown">Copy</button>
    </div>
    <p class="muted">Add <code>?branch=main</code> for a branch, <code>?step=Tests</code> for one step.</p>
  </section>`;
}

function templateNote(p: Pipeline): Part {
  return p.pipelineTemplateUuid ? notice('This pipeline uses a pipeline template: the template’s steps run its builds, not the steps below.') : '';
}

export function registerPipelineSettingsPages(web: WebRouter): void {
  const { pipelines, publicUrl } = web.deps;

  const pipelineLinks = (org: string, p: Pipeline, current: 'settings' | 'steps', editable: boolean) =>
    html`<nav class="subnav" aria-label="Pipeline">
      <a href="/${org}/${p.slug}">Builds</a>
      <a href="/${org}/${p.slug}/steps" ${current === 'steps' ? html`aria-current="page"` : ''}>Steps</a>
      ${editable ? html`<a href="/${org}/${p.slug}/settings" ${current === 'settings' ? html`aria-current="page"` : ''}>Settings</a>` : ''}
    </nav>`;

  const settingsPage = (ctx: PageContext, org: string, p: Pipeline, state: FormState, saved: boolean) => {
    const base = `/${org}/${p.slug}`;
    return layout(
      ctx,
      `Settings · ${p.name}`,
      html`<p class="muted"><a href="/${org}">Pipelines</a></p>
        <h1>${p.name}: settings</h1>
        ${pipelineLinks(org, p, 'settings', true)} ${saved ? notice('Settings saved.') : ''} ${formProblems(state)}
        <form method="post" action="${base}/settings" class="settings" novalidate>
          ${csrfField(ctx)} <input type="hidden" name="version" value="${settingsVersion(p)}" />
          ${formField(state, { name: 'name', label: 'Name', value: p.name, required: true, maxlength: 255 })}
          ${formField(state, { name: 'description', label: 'Description', value: p.description ?? '', maxlength: 4096 })}
          ${formField(state, { name: 'repository', label: 'Repository', hint: 'A Git URL the agents can clone.', value: p.repository, required: true, maxlength: 1024 })}
          ${formField(state, { name: 'default_branch', label: 'Default branch', value: p.defaultBranch ?? '', maxlength: 255 })}
          ${formField(state, {
            name: 'branch_configuration',
            label: 'Branch filter',
            hint: 'Which branches build, e.g. "main release/* !wip-*". Empty builds every branch.',
            value: p.branchConfiguration ?? '',
            maxlength: 4096,
          })}
          <fieldset>
            <legend>Intermediate builds</legend>
            ${checkboxField(state, {
              name: 'skip_queued_branch_builds',
              label: 'Skip builds still queued when a newer one of the branch is created',
              checked: p.skipQueuedBranchBuilds,
            })}
            ${formField(state, {
              name: 'skip_queued_branch_builds_filter',
              label: 'Only on these branches (skip)',
              hint: 'Branch patterns; empty means every branch.',
              value: p.skipQueuedBranchBuildsFilter ?? '',
              maxlength: 4096,
            })}
            ${checkboxField(state, {
              name: 'cancel_running_branch_builds',
              label: 'Cancel running builds when a newer one of the branch is created',
              checked: p.cancelRunningBranchBuilds,
            })}
            ${formField(state, {
              name: 'cancel_running_branch_builds_filter',
              label: 'Only on these branches (cancel)',
              hint: 'Branch patterns; empty means every branch.',
              value: p.cancelRunningBranchBuildsFilter ?? '',
              maxlength: 4096,
            })}
          </fieldset>
          ${templateNote(p)}
          ${formField(state, {
            name: 'configuration',
            label: 'Steps (YAML)',
            hint:
              p.configuration === null
                ? 'These steps were set through the API; saving changed steps here makes this YAML the pipeline’s configuration.'
                : 'Checked when you save: an error names its step and line.',
            value: stepsYaml(p),
            rows: 18,
            code: true,
          })}
          <p><button type="submit">Save settings</button></p>
        </form>
        ${badgeSection(pipelines.badgeUrl(p.id), `${publicUrl}${base}`, p.name)}`,
      { scripts: ['copy.js'] },
    );
  };

  web.page('/:org/:pipeline/settings', 'updatePipeline', async ({ principal, params, query, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline, perms } = await pipelines.get(actor, params.pipeline!);
    // The API's answer to an update by a reader: 403, and no form to fill in for nothing.
    if (!can(ctx, 'updatePipeline', { pipeline: perms })) throw new ForbiddenError();
    return settingsPage(ctx, actor.organization.slug, pipeline, freshForm(), query.saved === '1');
  });

  web.action('/:org/:pipeline/settings', 'updatePipeline', async ({ principal, params, body, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline } = await pipelines.get(actor, params.pipeline!);
    const org = actor.organization.slug;
    return submitOrShowAgain(
      body,
      FIELDS,
      (state) => settingsPage(ctx, org, pipeline, state, false),
      async () => {
        if (body.version !== settingsVersion(pipeline)) {
          // Shown again over the current settings (and their version): saving again is a choice.
          throw new ConflictError(
            'This pipeline was changed since the form was shown: your input is kept below, check it against the current settings and save again.',
          );
        }
        const configuration = textField(body, 'configuration', { max: 262_144 });
        // Steps set through the API are shown as YAML: left as shown, they stay as they are.
        const changedSteps = (configuration ?? '') !== stepsYaml(pipeline).trim();
        const { pipeline: saved } = await pipelines.update(actor, pipeline.slug, {
          name: textField(body, 'name', { max: 255 }) ?? '',
          description: textField(body, 'description', { max: 4096 }) ?? null,
          repository: textField(body, 'repository', { max: 1024 }) ?? '',
          default_branch: textField(body, 'default_branch', { max: 255 }) ?? null,
          branch_configuration: textField(body, 'branch_configuration', { max: 4096 }) ?? null,
          skip_queued_branch_builds: checked(body, 'skip_queued_branch_builds'),
          skip_queued_branch_builds_filter: textField(body, 'skip_queued_branch_builds_filter', { max: 4096 }) ?? null,
          cancel_running_branch_builds: checked(body, 'cancel_running_branch_builds'),
          cancel_running_branch_builds_filter: textField(body, 'cancel_running_branch_builds_filter', { max: 4096 }) ?? null,
          ...(changedSteps ? { configuration: configuration ?? '' } : {}),
        });
        return `/${org}/${saved.slug}/settings?saved=1`;
      },
    );
  });

  web.page('/:org/:pipeline/steps', 'getPipeline', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline, perms } = await pipelines.get(actor, params.pipeline!);
    const org = actor.organization.slug;
    const editable = can(ctx, 'updatePipeline', { pipeline: perms });
    const template = pipeline.template;
    return layout(
      ctx,
      `Steps · ${pipeline.name}`,
      html`<p class="muted"><a href="/${org}">Pipelines</a></p>
        <h1>${pipeline.name}: steps</h1>
        ${pipelineLinks(org, pipeline, 'steps', editable)} ${templateNote(pipeline)}
        <h2>${pipeline.configuration === null ? 'Steps' : 'Steps (YAML)'}</h2>
        <pre class="steps-yaml" tabindex="0" aria-label="The pipeline's steps">${stepsYaml(pipeline)}</pre>
        ${
          template
            ? html`<h2>The template’s steps</h2>
                <pre class="steps-yaml" tabindex="0" aria-label="The template's steps">
${stepsYaml({ configuration: null, steps: template.steps, env: template.env })}</pre>`
            : ''
        }
        ${editable ? html`<p class="actions"><a class="button" href="/${org}/${pipeline.slug}/settings">Edit steps</a></p>` : ''}
        ${badgeSection(pipelines.badgeUrl(pipeline.id), `${publicUrl}/${org}/${pipeline.slug}`, pipeline.name)}`,
      { scripts: ['copy.js'] },
    );
  });
}
