/** The organization's home (its pipelines with their latest default-branch build), a pipeline's builds, and the new pipeline and new build forms. */
import type { BuildState } from '../../builds/model';
import { BUILD_STATES as ALL_BUILD_STATES } from '../../builds/states';
import type { BuildWithJobs } from '../../builds/service';
import { actorFor, mayCall } from '../context';
import { isUuid } from '../../core/uuid';
import { html } from '../html';
import type { WebRouter } from '../routes';
import { buildBadge, csrfField, duration, layout, pagination, table, time } from '../ui';
import { emojify } from '../emoji';
import { keyValueLines, pageNumber, textField } from './forms';

const PER_PAGE = 30;
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
        ${mayCall(principal, 'createPipeline') ? html`<p class="actions"><a class="button" href="/organizations/${actor.organization.slug}/pipelines/new">New pipeline</a></p>` : ''}
        <h2>Pipelines</h2>
        ${table(['Pipeline', 'Latest on default branch', { label: 'Default branch', optional: true }, 'Builds now'], rows, html`<p>No pipelines yet.</p>`)}`,
    );
  });

  web.page('/organizations/:org/pipelines/new', 'createPipeline', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    return layout(
      ctx,
      'New pipeline',
      html`<h1>New pipeline</h1>
        <form method="post" action="/organizations/${actor.organization.slug}/pipelines">
          ${csrfField(ctx)} <label for="name">Name</label><input type="text" id="name" name="name" required maxlength="255" />
          <label for="repository">Repository</label>
          <p class="hint" id="repository-hint">A Git URL the agents can clone.</p>
          <input type="text" id="repository" name="repository" required aria-describedby="repository-hint" /> <label for="default_branch">Default branch</label
          ><input type="text" id="default_branch" name="default_branch" value="main" /> <label for="configuration">Steps (YAML)</label
          ><textarea id="configuration" name="configuration" rows="10">
steps:
  - command: "echo hello"
</textarea>
          <p><button type="submit">Create pipeline</button></p>
        </form>`,
    );
  });

  web.action('/organizations/:org/pipelines', 'createPipeline', async ({ principal, params, body }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline } = await pipelines.create(actor, {
      name: textField(body, 'name', { max: 255, required: true }),
      repository: textField(body, 'repository', { max: 1024, required: true }),
      default_branch: textField(body, 'default_branch', { max: 255 }) ?? null,
      configuration: textField(body, 'configuration', { max: 1_000_000 }) ?? 'steps: []',
    });
    return `/${actor.organization.slug}/${pipeline.slug}`;
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
        ${perms.build && mayCall(principal, 'createBuild') ? html`<p class="actions"><a class="button" href="${base}/builds/new">New build</a></p>` : ''}
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

  web.page('/:org/:pipeline/builds/new', 'createBuild', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { pipeline } = await pipelines.get(actor, params.pipeline!);
    const base = `/${actor.organization.slug}/${pipeline.slug}`;
    return layout(
      ctx,
      `New build · ${pipeline.name}`,
      html`<p class="muted"><a href="${base}">${pipeline.name}</a></p>
        <h1>New build</h1>
        <form method="post" action="${base}/builds">
          ${csrfField(ctx)} <label for="message">Message</label><input type="text" id="message" name="message" maxlength="65536" />
          <label for="commit">Commit</label><input type="text" id="commit" name="commit" value="HEAD" required maxlength="255" />
          <label for="branch">Branch</label><input type="text" id="branch" name="branch" value="${pipeline.defaultBranch ?? 'main'}" required maxlength="255" />
          <label for="env">Environment variables</label>
          <p class="hint" id="env-hint">One KEY=value per line.</p>
          <textarea id="env" name="env" rows="3" aria-describedby="env-hint"></textarea> <label for="meta_data">Meta-data</label>
          <p class="hint" id="meta-hint">One key=value per line.</p>
          <textarea id="meta_data" name="meta_data" rows="3" aria-describedby="meta-hint"></textarea>
          <p><button type="submit">Create build</button></p>
        </form>`,
    );
  });

  web.action('/:org/:pipeline/builds', 'createBuild', async ({ principal, params, body }) => {
    const actor = actorFor(principal, params.org!);
    const created = await builds.create(actor, params.pipeline!, {
      commit: textField(body, 'commit', { max: 255, required: true })!,
      branch: textField(body, 'branch', { max: 255, required: true })!,
      message: textField(body, 'message', { max: 65536 }) ?? null,
      env: keyValueLines(body, 'env'),
      meta_data: keyValueLines(body, 'meta_data'),
    });
    return `/${actor.organization.slug}/${created.pipeline.slug}/builds/${created.build.number}`;
  });
}
