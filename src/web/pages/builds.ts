/**
 * A build's page: its header, jobs in order (waiters as separators, block steps with their
 * fields and an Unblock form, each command job's log loaded and tailed by /_assets/log.js),
 * annotations and artifacts; the actions (cancel, rebuild, retry, unblock); a job's log as JSON
 * for the log script and as raw text to download.
 */
import type { Job } from '../../builds/jobs/model';
import type { BuildWithJobs } from '../../builds/service';
import type { ManualField } from '../../pipelines/configuration/step-types';
import { CANCELABLE_BUILD_STATES, LIVE_JOB_STATES, RETRYABLE_JOB_STATES, retryFrom } from '../../builds/states';
import { sendLogText } from '../../builds/jobs/log-output';
import { NotFoundError, ValidationError } from '../../core/errors';
import type { Agent } from '../../agents/repository';
import type { Annotation } from '../../annotations/repository';
import { rewriteArtifactLinks } from '../../annotations/render';
import type { Artifact } from '../../artifacts/repository';
import { DOWNLOAD_URL_SECONDS } from '../../artifacts/service';
import { actorFor, idParam, mayCall } from '../context';
import { html, trustedHtml, type Html } from '../html';
import { decodeLogState, encodeLogState, PLAIN_STYLE, renderLogLine, renderLogLines } from '../log';
import type { WebRouter } from '../routes';
import { csrfField, duration, layout, postButton, stateBadge, table, time, type PageContext } from '../ui';

/** Most bytes of a log one read of the log viewer renders (it reads on for the rest). */
export const LOG_READ_LIMIT = 2 * 1024 * 1024;

/** A byte count from the query: a non-negative integer, `fallback` when absent. */
function byteCount(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d{1,15}$/.test(value)) throw ValidationError.field(name, 'must be a whole number of bytes');
  return Number(value);
}

function buildNumber(s: string | undefined): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1 || n > 2_147_483_647) throw new NotFoundError('build');
  return n;
}

function jobName(j: Job): string {
  if (j.name) return j.name;
  if (j.type === 'script') return j.command ?? 'Command';
  return j.type === 'trigger' ? 'Trigger' : j.type === 'manual' ? 'Block' : 'Wait';
}

interface BuildPageView {
  ctx: PageContext;
  item: BuildWithJobs;
  agents: Map<string, Agent>;
  annotations: Annotation[];
  artifacts: Artifact[];
  canWrite: boolean;
  canReadLogs: boolean;
}

function unblockForm(v: BuildPageView, base: string, j: Job): Html {
  const step = j.step.type === 'manual' ? j.step : null;
  const fields = step?.fields ?? [];
  const id = (f: ManualField) => `f-${j.id}-${f.key}`;
  const field = (f: ManualField) => {
    const label = f.text ?? f.select ?? f.key;
    const hint = f.hint ? html`<p class="hint" id="${id(f)}-hint">${f.hint}</p>` : '';
    const described = f.hint ? html` aria-describedby="${id(f)}-hint"` : '';
    const defaults = Array.isArray(f.default) ? f.default : f.default !== undefined ? [f.default] : [];
    if (f.options) {
      return html`<label for="${id(f)}">${label}</label>${hint}<select
          id="${id(f)}"
          name="field:${f.key}"
          ${f.multiple ? html` multiple` : ''}${f.required ? html` required` : ''}${described}
        >
          ${
            f.required || f.multiple ? '' : html`<option value=""></option>`
          }${f.options.map((o) => html`<option value="${o.value}" ${defaults.includes(o.value) ? html` selected` : ''}>${o.label}</option>`)}
        </select>`;
    }
    return html`<label for="${id(f)}">${label}</label>${hint}<input
        type="text"
        id="${id(f)}"
        name="field:${f.key}"
        value="${defaults[0] ?? ''}"
        ${f.required ? html` required` : ''}${described}
      />`;
  };
  return html`<form method="post" action="${base}/jobs/${j.id}/unblock" class="unblock">
    ${csrfField(v.ctx)} ${step?.prompt ? html`<p>${step.prompt}</p>` : ''}${fields.map(field)}
    <p><button type="submit">Unblock</button></p>
  </form>`;
}

function jobItem(v: BuildPageView, base: string, j: Job): Html {
  if (j.type === 'waiter') return html`<li class="waiter" id="${j.id}" aria-label="Wait step">${stateBadge(j.state)} wait</li>`;
  const agent = j.agentId ? v.agents.get(j.agentId) : undefined;
  const head = html`<div class="job-head">
    <span class="job-name">${jobName(j)}</span>${stateBadge(j.state)}${
      j.type === 'script'
        ? html`<span class="muted">${duration(j.startedAt, j.finishedAt)}</span>${
              agent ? html`<span class="muted">on <a href="/organizations/${v.ctx.orgSlug ?? ''}/agents/${agent.id}">${agent.name}</a></span>` : ''
            }${j.exitStatus !== null ? html`<span class="muted">exit ${j.exitStatus}</span>` : ''}${j.retried ? html`<span class="muted">retried</span>` : ''}`
        : ''
    }
  </div>`;
  if (j.type === 'manual') {
    const by = j.unblockedBy ? html`<p class="muted">Unblocked by ${j.unblockedBy.name} at ${time(j.unblockedAt)}</p>` : '';
    return html`<li id="${j.id}">${head}${by}${j.state === 'blocked' && v.canWrite ? unblockForm(v, base, j) : ''}</li>`;
  }
  if (j.type === 'trigger') {
    const t = j.triggeredBuild;
    return html`<li id="${j.id}">
      ${head}${t ? html`<p>Triggered <a href="/${v.ctx.orgSlug ?? ''}/${t.pipeline_slug}/builds/${t.number}">${t.pipeline_slug} #${t.number}</a></p>` : ''}
    </li>`;
  }
  const jobPath = `${base}/jobs/${j.id}`;
  const retry =
    v.canWrite &&
    !j.retried &&
    (RETRYABLE_JOB_STATES.includes(j.state) ||
      (retryFrom('retry_passed').includes(j.state) && j.step.type === 'script' && j.step.retry?.manual?.permit_on_passed))
      ? postButton(v.ctx, `${jobPath}/retry`, 'Retry', { secondary: true, name: `Retry ${jobName(j)}` })
      : '';
  const running = LIVE_JOB_STATES.includes(j.state);
  return html`<li id="${j.id}">
    ${head}
    <div class="actions">${retry}${v.canReadLogs ? html`<a href="${jobPath}/log.txt" download="${`job-${j.id}.log`}">Download log</a>` : ''}</div>
    ${
      v.canReadLogs
        ? html`<details class="job-log" ${running ? html` open` : ''}>
            <summary>Log</summary>
            <div class="log" role="log" aria-label="Log of ${jobName(j)}" data-log-url="${jobPath}/log" ${running ? html` data-running="1"` : ''}>
              <p class="muted">Loading…</p>
            </div>
          </details>`
        : ''
    }
  </li>`;
}

export function buildPage(v: BuildPageView): string {
  const { build, pipeline, jobs } = v.item;
  const org = v.ctx.orgSlug!;
  const base = `/${org}/${pipeline.slug}/builds/${build.number}`;
  const actions = v.canWrite
    ? html`<div class="actions">
        ${CANCELABLE_BUILD_STATES.includes(build.state) ? postButton(v.ctx, `${base}/cancel`, 'Cancel build', { secondary: true }) : ''}${
          pipeline.allowRebuilds ? postButton(v.ctx, `${base}/rebuild`, 'Rebuild') : ''
        }
      </div>`
    : '';
  return layout(
    v.ctx,
    `${pipeline.name} #${build.number}`,
    html`<p class="muted"><a href="/${org}">${v.item.actor.organization.name}</a> / <a href="/${org}/${pipeline.slug}">${pipeline.name}</a></p>
      <h1>${build.message ?? `Build #${build.number}`} <span class="muted">#${build.number}</span></h1>
      <p>${stateBadge(build.state)} <span data-live-status role="status"></span></p>
      <dl class="facts">
        <dt>Branch</dt>
        <dd>${build.branch}</dd>
        <dt>Commit</dt>
        <dd><code>${build.commit}</code></dd>
        <dt>Created by</dt>
        <dd>${build.creator?.name ?? build.author?.name ?? '–'}</dd>
        <dt>Created</dt>
        <dd>${time(build.createdAt)}</dd>
        <dt>Started</dt>
        <dd>${time(build.startedAt)}</dd>
        <dt>Finished</dt>
        <dd>${time(build.finishedAt)}</dd>
        <dt>Duration</dt>
        <dd>${duration(build.startedAt, build.finishedAt)}</dd>
        ${
          build.rebuiltFrom
            ? html`<dt>Rebuilt from</dt>
                <dd><a href="/${org}/${pipeline.slug}/builds/${build.rebuiltFrom.number}">#${build.rebuiltFrom.number}</a></dd>`
            : ''
        }
      </dl>
      ${actions}
      ${
        v.annotations.length
          ? html`<h2>Annotations</h2>
              ${v.annotations.map(
                (a) =>
                  html`<section class="annotation style-${a.style}" aria-label="Annotation ${a.context}">
                    ${trustedHtml(rewriteArtifactLinks(a.bodyHtml, (path) => `${base}/artifacts?path=${encodeURIComponent(path)}`))}
                  </section>`,
              )}`
          : ''
      }
      <h2>Jobs</h2>
      <ol class="jobs">
        ${jobs.map((j) => jobItem(v, base, j))}
      </ol>
      ${
        v.artifacts.length
          ? html`<h2>Artifacts</h2>
              ${table(
                ['Path', 'Size', 'State'],
                v.artifacts.map(
                  (a) =>
                    html`<tr>
                      <td>${a.state === 'finished' ? html`<a href="${base}/jobs/${a.jobId}/artifacts/${a.id}">${a.path}</a>` : a.path}</td>
                      <td>${a.fileSize} bytes</td>
                      <td>${a.state}</td>
                    </tr>`,
                ),
              )}`
          : ''
      }`,
    { scripts: ['log.js'] },
  );
}

/** `field:<key>` inputs of an unblock form -> the step's `fields` (a multiple select gives several values). */
function unblockFields(body: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) {
    if (!k.startsWith('field:')) continue;
    const value = Array.isArray(v) ? v.map(String).join('\n') : String(v);
    if (value.length > 65536) throw ValidationError.field(k.slice(6), 'is too long');
    if (value !== '') out[k.slice(6)] = value;
  }
  return out;
}

export function registerBuildPages(web: WebRouter): void {
  const { builds, jobs, agents, annotations, artifacts, publicUrl } = web.deps;

  web.page('/:org/:pipeline/builds/:number', 'getBuild', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const item = await builds.get(actor, params.pipeline!, buildNumber(params.number), true, { pipeline: true });
    const agentIds = [...new Set(item.jobs.flatMap((j) => (j.agentId ? [j.agentId] : [])))];
    const [found, notes, files] = await Promise.all([
      agentIds.length ? agents.byIds(agentIds) : Promise.resolve([]),
      annotations.list({ item, job: null }, 0, 100),
      mayCall(principal, 'listBuildArtifacts')
        ? artifacts.listByBuild(actor, item.pipeline.slug, item.build.number, 0, 100).then((r) => r.items)
        : Promise.resolve([]),
    ]);
    return buildPage({
      ctx,
      item,
      agents: new Map(found.map((a) => [a.id, a])),
      annotations: notes,
      artifacts: files,
      canWrite: mayCall(principal, 'cancelBuild') && item.perms.build,
      canReadLogs: mayCall(principal, 'getJobLog'),
    });
  });

  const target = (params: Record<string, string>) => [params.pipeline!, buildNumber(params.number)] as const;
  /** The job a page's path names, under its build. */
  const jobAt = (params: Record<string, string>) => ({ pipelineSlug: params.pipeline!, number: buildNumber(params.number), jobId: idParam(params.job, 'job') });

  web.action('/:org/:pipeline/builds/:number/cancel', 'cancelBuild', async ({ principal, params }) => {
    const actor = actorFor(principal, params.org!);
    const item = await builds.cancel(actor, ...target(params));
    return `/${actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}`;
  });
  web.action('/:org/:pipeline/builds/:number/rebuild', 'rebuildBuild', async ({ principal, params }) => {
    const actor = actorFor(principal, params.org!);
    const item = await builds.rebuild(actor, ...target(params));
    return `/${actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}`;
  });
  web.action('/:org/:pipeline/builds/:number/jobs/:job/retry', 'retryJob', async ({ principal, params }) => {
    const actor = actorFor(principal, params.org!);
    const { item, jobId } = await jobs.retry(actor, jobAt(params));
    return `/${actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}#${jobId}`;
  });
  web.action('/:org/:pipeline/builds/:number/jobs/:job/unblock', 'unblockJob', async ({ principal, params, body }) => {
    const actor = actorFor(principal, params.org!);
    const { item, jobId } = await jobs.unblock(actor, jobAt(params), { fields: unblockFields(body) });
    return `/${actor.organization.slug}/${item.pipeline.slug}/builds/${item.build.number}#${jobId}`;
  });

  // The log viewer's view of a log (assets/log.js): its lines from byte `offset` on (0: the
  // start), rendered from the style `state` (the token the read before ended with), at most about
  // `limit` bytes of whole lines at a time (`more`: read on from `offset`). While the job runs, a
  // last line without its newline comes as `tail`, rendered again by the next read.
  web.data('/:org/:pipeline/builds/:number/jobs/:job/log', 'getJobLog', async ({ principal, params, query, res }) => {
    const actor = actorFor(principal, params.org!);
    const from = byteCount(query.offset, 'offset', 0);
    const limit = Math.min(LOG_READ_LIMIT, Math.max(4096, byteCount(query.limit, 'limit', LOG_READ_LIMIT)));
    const style = query.state === undefined || query.state === '' ? PLAIN_STYLE : decodeLogState(query.state);
    if (!style) throw ValidationError.field('state', 'is not a state this endpoint gave');
    const { job, size, pages } = await jobs.logFrom(actor, jobAt(params), from);
    if (from > size) throw ValidationError.field('offset', `is past the end of the log (${size} bytes)`);
    const finished = !LIVE_JOB_STATES.includes(job.state);
    let text = '';
    let bytes = 0;
    let more = false;
    read: for await (const page of pages) {
      for (const content of page) {
        if (bytes >= limit && text.includes('\n')) {
          more = true;
          break read;
        }
        text += content;
        bytes += Buffer.byteLength(content);
      }
    }
    const cut = text.lastIndexOf('\n') + 1;
    const whole = more || !finished ? text.slice(0, cut) : text;
    const rendered = renderLogLines(whole, style);
    const rest = more || finished ? '' : text.slice(cut);
    const tail = rest ? renderLogLine(rest, { style: rendered.style }) : null;
    res.json({
      lines: rendered.lines,
      tail,
      offset: from + Buffer.byteLength(whole),
      size,
      state: encodeLogState(rendered.style),
      finished,
      more,
    });
  });
  web.data('/:org/:pipeline/builds/:number/jobs/:job/log.txt', 'getJobLogText', async ({ principal, params, res }) => {
    const actor = actorFor(principal, params.org!);
    const pages = await jobs.logPages(actor, jobAt(params));
    res.setHeader('Content-Disposition', `attachment; filename="job-${idParam(params.job, 'job').replace(/[^A-Za-z0-9-]/g, '')}.log"`);
    await sendLogText(res, pages);
  });
  web.data('/:org/:pipeline/builds/:number/jobs/:job/artifacts/:id', 'downloadArtifact', async ({ principal, params, res }) => {
    const actor = actorFor(principal, params.org!);
    const [pipelineSlug, number] = target(params);
    const artifact = await artifacts.downloadable(actor, { pipelineSlug, number }, idParam(params.job, 'job'), idParam(params.id, 'artifact'));
    res.redirect(302, artifacts.publicContentUrl(publicUrl, artifact.id, DOWNLOAD_URL_SECONDS));
  });
  // Where an annotation's `artifact://path` goes: the build's newest uploaded artifact with that path.
  web.data('/:org/:pipeline/builds/:number/artifacts', 'listBuildArtifacts', async ({ principal, params, query, res }) => {
    const actor = actorFor(principal, params.org!);
    const path = query.path ?? '';
    if (path === '' || path.length > 4096) throw new NotFoundError('artifact');
    const [pipelineSlug, number] = target(params);
    const artifact = await artifacts.downloadableByPath(actor, { pipelineSlug, number }, path);
    res.redirect(302, artifacts.publicContentUrl(publicUrl, artifact.id, DOWNLOAD_URL_SECONDS));
  });
}
