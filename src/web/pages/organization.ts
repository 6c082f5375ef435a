/** The organization's home (its pipelines with their latest default-branch build), a pipeline's builds, and the new pipeline and new build forms. */
import type { BuildState } from '../../builds/model';
import { BUILD_STATES as ALL_BUILD_STATES } from '../../builds/states';
import type { BuildWithJobs } from '../../builds/service';
import { actorFor, mayCall } from '../context';
import { isUuid } from '../../core/uuid';
import { html } from '../html';
import type { WebRouter } from '../routes';
import { buildBadge, csrfField, duration, layout, pagination, table, time, type PageContext } from '../ui';
import { emojify } from '../emoji';
import { can } from '../permissions';
import { ForbiddenError } from '../../core/errors';
import type { Pipeline } from '../../pipelines/repository';
import { formField, formProblems, freshForm, keyValueLines, pageNumber, submitOrShowAgain, textField, type FormState } from './forms';

const PER_PAGE = 30;
const PIPELINE_FIELDS = ['name', 'repository', 'default_branch', 'configuration'] as const;
const BUILD_FIELDS = ['message', 'commit', 'branch', 'env', 'meta_data'] as const;
/** What the state filter offers: every build state, then `finished`. */
const BUILD_STATES: (BuildState | 'finished')[] = [...ALL_BUILD_STATES, 'finished'];

function buildRow(org: string, b: BuildWithJobs) {
  const path = `/${org}/${b.pipeline.slug}/builds/${b.build.number}`;
  return html`<tr>
    <td><a href="${path}">#${b.build.number}</a></td>
    <td>${buildBadge(b.build)}</td>
    <td>${b.build.message ? emojify(b.build.message) : html`<span class="muted">(no message)</span>`}</td>
    <td class="cols-optional">${b.build.branch}</td>
    <td class="cols-optional"><code title="${b.build.commit}">${b.build.commit.slice(0, 7)}</code></td>
    <td class="cols-optional">${duration(b.build.startedAt, b.build.finishedAt)}</td>
    <td class="cols-optional">${b.build.creator?.name ?? b.build.author?.name ?? '–'}</td>
    <td class="cols-optional">${time(b.build.createdAt)}</td>
  </tr>`;
}

export function registerOrganizationPages(web: WebRouter): void {
  const { pipelines, builds } = web.deps;

  web.page('/:org', 'listPipelines', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { items } = await pipelines.list(actor, {}, 0, 100);
    const counts = await pipelines.counts(items.map((i) => i.pipeline.id));
    const readBuilds = mayCall(principal, 'listPipelineBuilds');
    const latest = await Promise.all(
      items.map(async ({ pipeline }) =>
        readBuilds
          ? ((await builds.list({ actor, pipelineSlug: pipeline.slug }, { branch: pipeline.defaultBranch ?? undefined, exclude_jobs: true }, 0, 1))[0] ?? null)
          : null,
      ),
    );
    const rows = items.map(({ pipeline }, i) => {
      const c = counts.get(pipeline.id);
      const b = latest[i];
      return html`<tr>
        <td>
          <a href="/${actor.organization.slug}/${pipeline.slug}">${pipeline.name}</a>
          <div class="muted">${pipeline.description ?? ''}</div>
        </td>
        <td>
          ${b ? html`<a href="/${actor.organization.slug}/${pipeline.slug}/builds/${b.build.number}">${buildBadge(b.build)} #${b.build.number}</a>` : html`<span class="muted">No builds</span>`}
        </td>
        <td class="cols-optional">${pipeline.defaultBranch ?? '–'}</td>
        <td>${c?.runningBuilds ?? 0} running, ${c?.scheduledBuilds ?? 0} scheduled</td>
      </tr>`;
    });
    return layout(
      ctx,
      actor.organization.name,
      html`<h1>${actor.organization.name}</h1>
        ${can(ctx, 'createPipeline') ? html`<p class="actions"><a class="button" href="/organizations/${actor.organization.slug}/pipelines/new">New pipeline</a></p>` : ''}
        <h2>Pipelines</h2>
        ${table(['Pipeline', 'Latest on default branch', { label: 'Default branch', optional: true }, 'Builds now'], rows, html`<p>No pipelines yet.</p>`)}`,
    );
  });

  const newPipelinePage = (ctx: PageContext, org: string, state: FormState) =>
    layout(
      ctx,
      'New pipeline',
      html`<h1>New pipeline</h1>
        ${formProblems(state)}
        <form method="post" action="/organizations/${org}/pipelines" novalidate>
          ${csrfField(ctx)} ${formField(state, { name: 'name', label: 'Name', required: true, maxlength: 255 })}
          ${formField(state, { name: 'repository', label: 'Repository', hint: 'A Git URL the agents can clone.', required: true, maxlength: 1024 })}
          ${formField(state, { name: 'default_branch', label: 'Default branch', value: 'main', maxlength: 255 })}
          ${formField(state, { name: 'configuration', label: 'Steps (YAML)', value: 'steps:\n  - command: "echo hello"\n', rows: 10, code: true })}
          <p><button type="submit">Create pipeline</button></p>
        </form>`,
    );

  web.page('/organizations/:org/pipelines/new', 'createPipeline', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    return newPipelinePage(ctx, actor.organization.slug, freshForm());
  });

  web.action('/organizations/:org/pipelines', 'createPipeline', async ({ principal, params, body, ctx }) => {
    const actor = actorFor(principal, params.org!);
    return submitOrShowAgain(
      body,
      PIPELINE_FIELDS,
      (state) => newPipelinePage(ctx, actor.organization.slug, state),
      async () => {
        // Blank name and repository go to the service, which names every missing field at once.
        const { pipeline } = await pipelines.create(actor, {
          name: textField(body, 'name', { max: 255 }) ?? '',
          repository: textField(body, 'repository', { max: 1024 }) ?? '',
          default_branch: textField(body, 'default_branch', { max: 255 }) ?? null,
          configuration: textField(body, 'configuration', { max: 262_144 }) ?? 'steps: []',
        });
        return `/${actor.organization.slug}/${pipeline.slug}`;
      },
    );
  });

  web.page('/:org/:pipeline', 'listPipelineBuilds', async ({ principal, params, query, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline, perms } = await pipelines.get(actor, params.pipeline!);
    const page = pageNumber(query.page);
    const state = BUILD_STATES.find((s) => s === query.state);
    const filter = { branch: query.branch?.slice(0, 255) || undefined, state, creator: isUuid(query.creator) ? query.creator : undefined };
    const found = await builds.list({ actor, pipelineSlug: pipeline.slug }, { ...filter, exclude_jobs: true }, (page - 1) * PER_PAGE, PER_PAGE + 1);
    const base = `/${actor.organization.slug}/${pipeline.slug}`;
    const creators = new Map(found.flatMap((b) => (b.build.creator ? [[b.build.creator.id, b.build.creator.name] as const] : [])));
    return layout(
      ctx,
      pipeline.name,
      html`<p class="muted"><a href="/${actor.organization.slug}">${actor.organization.name}</a></p>
        <h1>${pipeline.name}</h1>
        <dl class="facts">
          <dt>Repository</dt>
          <dd>${pipeline.repository}</dd>
          <dt>Default branch</dt>
          <dd>${pipeline.defaultBranch ?? '–'}</dd>
        </dl>
        <p class="actions">
          ${can(ctx, 'createBuild', { pipeline: perms }) ? html`<a class="button" href="${base}/builds/new">New build</a>` : ''}
          <a class="button secondary" href="${base}/steps">Steps</a>
          ${can(ctx, 'updatePipeline', { pipeline: perms }) ? html`<a class="button secondary" href="${base}/settings">Settings</a>` : ''}
        </p>
        <h2>Builds</h2>
        <form class="filters" method="get" action="${base}" role="search" aria-label="Filter builds">
          <div><label for="f-branch">Branch</label><input type="search" id="f-branch" name="branch" value="${filter.branch ?? ''}" /></div>
          <div>
            <label for="f-state">State</label
            ><select id="f-state" name="state">
              <option value="">Any</option>
              ${BUILD_STATES.map((s) => html`<option value="${s}" ${s === state ? html` selected` : ''}>${s.replace(/_/g, ' ')}</option>`)}
            </select>
          </div>
          <div>
            <label for="f-creator">Creator</label
            ><select id="f-creator" name="creator">
              <option value="">Anyone</option>
              ${filter.creator && !creators.has(filter.creator) ? html`<option value="${filter.creator}" selected>${filter.creator}</option>` : ''}
              <option value="${principal.user.id}" ${filter.creator === principal.user.id ? html` selected` : ''}>Me (${principal.user.name})</option>
              ${[...creators]
                .filter(([id]) => id !== principal.user.id)
                .map(([id, name]) => html`<option value="${id}" ${filter.creator === id ? html` selected` : ''}>${name}</option>`)}
            </select>
          </div>
          <div><button type="submit" class="secondary">Filter</button></div>
        </form>
        ${table(
          [
            'Build',
            'State',
            'Message',
            { label: 'Branch', optional: true },
            { label: 'Commit', optional: true },
            { label: 'Duration', optional: true },
            { label: 'Creator', optional: true },
            { label: 'Created', optional: true },
          ],
          found.slice(0, PER_PAGE).map((b) => buildRow(actor.organization.slug, b)),
          html`<p>No builds match.</p>`,
        )}
        ${pagination(base, { branch: filter.branch, state, creator: filter.creator }, page, found.length > PER_PAGE)}`,
    );
  });

  const newBuildPage = (ctx: PageContext, org: string, pipeline: Pipeline, state: FormState) => {
    const base = `/${org}/${pipeline.slug}`;
    return layout(
      ctx,
      `New build · ${pipeline.name}`,
      html`<p class="muted"><a href="${base}">${pipeline.name}</a></p>
        <h1>New build</h1>
        ${formProblems(state)}
        <form method="post" action="${base}/builds" novalidate>
          ${csrfField(ctx)} ${formField(state, { name: 'message', label: 'Message', maxlength: 65536 })}
          ${formField(state, { name: 'commit', label: 'Commit', value: 'HEAD', required: true, maxlength: 255 })}
          ${formField(state, { name: 'branch', label: 'Branch', value: pipeline.defaultBranch ?? 'main', required: true, maxlength: 255 })}
          ${formField(state, { name: 'env', label: 'Environment variables', hint: 'One KEY=value per line.', rows: 3 })}
          ${formField(state, { name: 'meta_data', label: 'Meta-data', hint: 'One key=value per line.', rows: 3 })}
          <p><button type="submit">Create build</button></p>
        </form>`,
    );
  };

  web.page('/:org/:pipeline/builds/new', 'createBuild', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline, perms } = await pipelines.get(actor, params.pipeline!);
    // The API refuses a build to whoever may only read the pipeline: no form for them either.
    if (!can(ctx, 'createBuild', { pipeline: perms })) throw new ForbiddenError();
    return newBuildPage(ctx, actor.organization.slug, pipeline, freshForm());
  });

  web.action('/:org/:pipeline/builds', 'createBuild', async ({ principal, params, body, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline } = await pipelines.get(actor, params.pipeline!);
    return submitOrShowAgain(
      body,
      BUILD_FIELDS,
      (state) => newBuildPage(ctx, actor.organization.slug, pipeline, state),
      async () => {
        const created = await builds.create(
          actor,
          pipeline.slug,
          {
            commit: textField(body, 'commit', { max: 255, required: true })!,
            branch: textField(body, 'branch', { max: 255, required: true })!,
            message: textField(body, 'message', { max: 65536 }) ?? null,
            env: keyValueLines(body, 'env'),
            meta_data: keyValueLines(body, 'meta_data'),
          },
          'ui',
        );
        return `/${actor.organization.slug}/${created.pipeline.slug}/builds/${created.build.number}`;
      },
    );
  });
}
