/**
 * A build's page: its header, jobs in order (waiters as separators, block steps with their
 * fields and an Unblock form, each command job's log loaded and tailed by /_assets/log.js),
 * annotations and artifacts; the actions (cancel, rebuild, retry, unblock); a job's log as JSON
 * for the log script and as raw text to download.
 */
import type { Job } from '../../builds/jobs/model';
import type { BuildWithJobs } from '../../builds/service';
import type { ManualField } from '../../pipelines/configuration/step-types';
import {
  CANCELABLE_BUILD_STATES,
  FAILING_JOB_STATES,
  JOB_STATE_PHASES,
  LIVE_JOB_STATES,
  RETRYABLE_JOB_STATES,
  RUNNING_ON_AGENT_JOB_STATES,
  retryFrom,
} from '../../builds/states';
import { matchesQueryRules } from '../../agents/query-rules';
import { isLive } from '../../agents/service';
import { customEmojis, emojiOrigins, emojify, type CustomEmojis } from '../emoji';
import { sendLogText } from '../../builds/jobs/log-output';
import { NotFoundError, ValidationError } from '../../core/errors';
import type { Agent } from '../../agents/repository';
import type { Annotation } from '../../annotations/repository';
import { rewriteArtifactLinks } from '../../annotations/render';
import type { Artifact } from '../../artifacts/repository';
import { DOWNLOAD_URL_SECONDS } from '../../artifacts/service';
import { actorFor, idParam, mayCall } from '../context';
import { agentsOfJobs, buildStateJson } from '../build-state';
import { html, trustedHtml, type Html, type Part } from '../html';
import { decodeLogState, encodeLogState, PLAIN_STYLE, renderLogLine, renderLogLines } from '../log';
import type { WebRouter } from '../routes';
import { buildBadge, csrfField, duration, layout, postButton, stateBadge, stateLook, table, time, type PageContext } from '../ui';

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
  if (j.type === 'manual' && j.step.type === 'manual') return j.step.label || 'Block';
  if (j.name) return j.name;
  if (j.type === 'script') return j.command ?? 'Command';
  return j.type === 'trigger' ? 'Trigger' : j.type === 'manual' ? 'Block' : 'Wait';
}

/** How many logs the page opens (and so tails) by itself: failed ones first, then running ones. */
export const LOG_OPEN_CAP = 5;

interface BuildPageView {
  ctx: PageContext;
  item: BuildWithJobs;
  agents: Map<string, Agent>;
  annotations: Annotation[];
  artifacts: Artifact[];
  canWrite: boolean;
  /** The blocked jobs this caller may unblock (a step's `allowed_teams` decides over `canWrite`). */
  unblockable: ReadonlySet<string>;
  canReadLogs: boolean;
  emojis: CustomEmojis;
  /** The organization's connected agents, when the token may list them (why a job waits). */
  connected: Agent[] | null;
}

/** Each job's earlier attempts (oldest first), by the id of its latest attempt; and the ids of the attempts shown only under it. */
export function attemptsOf(jobs: readonly Job[]): { earlier: Map<string, Job[]>; hidden: Set<string> } {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const earlier = new Map<string, Job[]>();
  const hidden = new Set<string>();
  for (const j of jobs) {
    if (j.retried && j.retriedInJobId && byId.has(j.retriedInJobId)) continue;
    const chain: Job[] = [];
    const seen = new Set([j.id]);
    for (
      let at = j.retrySource ? byId.get(j.retrySource.job_id) : undefined;
      at && !seen.has(at.id);
      at = at.retrySource ? byId.get(at.retrySource.job_id) : undefined
    ) {
      seen.add(at.id);
      chain.unshift(at);
      hidden.add(at.id);
    }
    if (chain.length) earlier.set(j.id, chain);
  }
  return { earlier, hidden };
}

/** The jobs whose logs open by themselves: failed ones first, then running ones, at most LOG_OPEN_CAP. */
export function logsOpenedByDefault(jobs: readonly Job[], hidden: ReadonlySet<string>): Set<string> {
  const shown = jobs.filter((j) => j.type === 'script' && !hidden.has(j.id));
  const failed = shown.filter((j) => FAILING_JOB_STATES.includes(j.state));
  const running = shown.filter((j) => RUNNING_ON_AGENT_JOB_STATES.includes(j.state));
  return new Set([...failed, ...running].slice(0, LOG_OPEN_CAP).map((j) => j.id));
}

/** Why a job no agent has taken waits: `waiting for an agent matching queue=deploy: 0 connected`. */
export function stuckReason(j: Job, connected: readonly Agent[] | null): string | null {
  if (j.type !== 'script' || j.agentId || JOB_STATE_PHASES[j.state] !== 'queued' || !connected) return null;
  const rules = j.agentQueryRules.length ? j.agentQueryRules : ['queue=default'];
  // A cluster's job runs on its cluster's agents of the queue it targets (the planner resolved it),
  // with the other rules as tags; a job in no cluster on the organization's agents, by its rules.
  const cluster = j.clusterId ?? null;
  const otherRules = [...j.agentQueryRules.filter((r) => !r.startsWith('queue=')), '*'];
  const matching = connected.filter((a) =>
    cluster === null
      ? a.clusterId === null && matchesQueryRules(j.agentQueryRules, a.metaData)
      : a.clusterId === cluster && (!j.clusterQueueId || a.clusterQueueId === j.clusterQueueId) && matchesQueryRules(otherRules, a.metaData),
  );
  const idle = matching.filter((a) => !a.jobId);
  return `Waiting for an agent matching ${rules.join(' ')}: ${matching.length} connected${matching.length ? `, ${idle.length} idle` : ''}`;
}

function parallelLabel(j: Job): Html | '' {
  if (j.parallelGroupIndex === null || !j.parallelGroupTotal) return '';
  const n = j.parallelGroupIndex + 1;
  return html`<span class="job-parallel" title="Parallel job ${n} of ${j.parallelGroupTotal}">${n}/${j.parallelGroupTotal}</span>`;
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
          ${f.multiple ? html` multiple` : ''}${f.required !== false ? html` required` : ''}${described}
        >
          ${
            f.required !== false || f.multiple ? '' : html`<option value=""></option>`
          }${f.options.map((o) => html`<option value="${o.value}" ${defaults.includes(o.value) ? html` selected` : ''}>${o.label}</option>`)}
        </select>`;
    }
    return html`<label for="${id(f)}">${label}</label>${hint}<input
        type="text"
        id="${id(f)}"
        name="field:${f.key}"
        value="${defaults[0] ?? ''}"
        ${f.required !== false ? html` required` : ''}${f.format !== undefined ? html` pattern="${f.format}"` : ''}${described}
      />`;
  };
  return html`<form method="post" action="${base}/jobs/${j.id}/unblock" class="unblock">
    ${csrfField(v.ctx)}${fields.map(field)}
    <p><button type="submit">${step?.submit ?? 'Unblock'}</button></p>
  </form>`;
}

/**
 * A log's panel: assets/log.js makes its toolbar (search, times, follow, top, end) and its lines
 * when it is first opened, so a page of 200 jobs carries none of them; the download works without it.
 */
function logViewer(jobPath: string, j: Job, open: boolean): Html {
  const finished = !LIVE_JOB_STATES.includes(j.state);
  return html`<details class="job-log" ${open ? html` open` : ''}>
    <summary>Log</summary>
    <div class="log-viewer" data-log-url="${jobPath}/log" data-job-id="${j.id}" data-name="${jobName(j)}" data-finished="${finished ? '1' : '0'}">
      <a href="${jobPath}/log.txt" download="${`job-${j.id}.log`}">Download log</a>
    </div>
  </details>`;
}

/** One job's row: state, name (emoji), n/N, agent, duration; then why it waits, its earlier attempts, its log. */
function jobRow(v: BuildPageView, base: string, j: Job, open: boolean, earlier: readonly Job[]): Html {
  const name = emojify(jobName(j), v.emojis);
  const agent = j.agentId ? v.agents.get(j.agentId) : undefined;
  const iso = (d: Date | null) => (d ? d.toISOString() : '');
  if (j.type === 'waiter') {
    return html`<li class="job job-waiter" id="${j.id}" data-job-id="${j.id}" aria-label="Wait step">
      <span class="job-state" data-job-badge>${stateBadge(j.state)}</span>
      <span class="muted">wait${j.step.type === 'waiter' && j.step.continue_on_failure ? ' (continues on failure)' : ''}</span>
    </li>`;
  }
  const jobPath = `${base}/jobs/${j.id}`;
  const retry =
    j.type === 'script' &&
    v.canWrite &&
    !j.retried &&
    (RETRYABLE_JOB_STATES.includes(j.state) ||
      (retryFrom('retry_passed').includes(j.state) && j.step.type === 'script' && j.step.retry?.manual?.permit_on_passed))
      ? postButton(v.ctx, `${jobPath}/retry`, 'Retry', { secondary: true, name: `Retry ${jobName(j)}` })
      : '';
  const row = html`<div class="job-row">
    <span class="job-state" data-job-badge>${stateBadge(j.state)}</span>
    <span class="job-name">${name}</span>${parallelLabel(j)}
    <span class="job-agent muted" data-job-agent
      >${agent ? html`<a href="/organizations/${v.ctx.orgSlug ?? ''}/agents/${agent.id}">${agent.name}</a>` : ''}</span
    >
    <span class="job-duration muted" data-job-duration data-started="${iso(j.startedAt)}" data-finished="${iso(j.finishedAt)}"
      >${j.type === 'script' ? duration(j.startedAt, j.finishedAt) : ''}</span
    >
    <span class="job-exit muted" data-job-exit>${j.exitStatus !== null ? `exit ${j.exitStatus}` : ''}</span>
    <span class="job-actions">${retry}</span>
  </div>`;
  const attrs = html`class="job job-${j.type}" id="${j.id}" data-job-id="${j.id}" data-state="${j.state}"`;
  if (j.type === 'manual') {
    const step = j.step.type === 'manual' ? j.step : null;
    const by = j.unblockedBy ? html`<p class="muted">Unblocked by ${j.unblockedBy.name} at ${time(j.unblockedAt)}</p>` : '';
    return html`<li ${attrs}>
      ${row}${step?.prompt && j.state === 'blocked' ? html`<p class="prompt">${emojify(step.prompt, v.emojis)}</p>` : ''}${by}${
        j.state === 'blocked' && v.unblockable.has(j.id) ? unblockForm(v, base, j) : ''
      }
    </li>`;
  }
  if (j.type === 'trigger') {
    const t = j.triggeredBuild;
    return html`<li ${attrs}>
      ${row}${t ? html`<p>Triggered <a href="/${v.ctx.orgSlug ?? ''}/${t.pipeline_slug}/builds/${t.number}">${t.pipeline_slug} #${t.number}</a></p>` : ''}
    </li>`;
  }
  const stuck = stuckReason(j, v.connected);
  const attempts = earlier.length
    ? html`<details class="attempts">
        <summary>${earlier.length === 1 ? '1 earlier attempt' : `${earlier.length} earlier attempts`}</summary>
        <ol>
          ${earlier.map((e, i) => {
            const by = e.agentId ? v.agents.get(e.agentId) : undefined;
            return html`<li class="attempt" id="${e.id}">
              <span class="muted">Attempt ${i + 1}</span> ${stateBadge(e.state)}
              <span class="muted"
                >${duration(e.startedAt, e.finishedAt)}${by ? ` on ${by.name}` : ''}${e.exitStatus !== null ? `, exit ${e.exitStatus}` : ''}${
                  e.retriedBy ? `, retried by ${e.retriedBy.name}` : e.retryType === 'automatic' ? ', retried automatically' : ''
                }</span
              >
              ${v.canReadLogs ? logViewer(`${base}/jobs/${e.id}`, e, false) : ''}
            </li>`;
          })}
        </ol>
      </details>`
    : '';
  return html`<li ${attrs}>
    ${row}${stuck ? html`<p class="stuck" role="note">${stuck}</p>` : ''}${attempts}${v.canReadLogs ? logViewer(jobPath, j, open) : ''}
  </li>`;
}

/** The steps as stages between waits, block steps as gates, groups boxed: each node links to its job. */
function stepGraph(v: BuildPageView, shown: readonly Job[]): Html {
  type Node = { group: string | null; jobs: Job[] };
  const stages: { kind: 'stage' | 'wait' | 'block'; nodes: Node[]; job?: Job }[] = [];
  let current: Node[] = [];
  const flush = () => {
    if (current.length) stages.push({ kind: 'stage', nodes: current });
    current = [];
  };
  for (const j of shown) {
    if (j.type === 'waiter') {
      flush();
      stages.push({ kind: 'wait', nodes: [], job: j });
    } else if (j.type === 'manual') {
      flush();
      stages.push({ kind: 'block', nodes: [], job: j });
    } else {
      const group = j.step.group_key ?? null;
      const last = current[current.length - 1];
      if (last && group !== null && last.group === group) last.jobs.push(j);
      else current.push({ group, jobs: [j] });
    }
  }
  flush();
  const node = (j: Job) =>
    html`<li class="node tone-${stateLook(j.state).tone}" data-node="${j.id}">
      <a href="#${j.id}">${stateBadge(j.state)} ${emojify(jobName(j), v.emojis)}${parallelLabel(j)}</a>
    </li>`;
  return html`<ol class="graph" aria-label="Steps">
    ${stages.map((st) =>
      st.kind === 'wait'
        ? html`<li class="graph-wait" aria-label="Wait"><span aria-hidden="true">&#8594;</span> wait</li>`
        : st.kind === 'block'
          ? html`<li class="graph-stage">
              <ul>
                ${node(st.job!)}
              </ul>
            </li>`
          : html`<li class="graph-stage">
              <ul>
                ${st.nodes.map((n) =>
                  n.group === null
                    ? n.jobs.map(node)
                    : html`<li class="graph-group">
                        <span class="muted">${n.group}</span>
                        <ul>
                          ${n.jobs.map(node)}
                        </ul>
                      </li>`,
                )}
              </ul>
            </li>`,
    )}
  </ol>`;
}

/** The command jobs on one time axis from the build's start (bars drawn by assets/build.js from the data attributes). */
function timeline(v: BuildPageView, shown: readonly Job[]): Part {
  const start = v.item.build.startedAt;
  const ran = shown.filter((j) => j.type === 'script' && j.startedAt);
  if (!start || !ran.length) return html`<p class="muted">No job has started yet.</p>`;
  const secs = (d: Date | null) => (d ? String(Math.max(0, Math.round((d.getTime() - start.getTime()) / 1000))) : '');
  return html`<ol class="timeline" data-build-started="${start.toISOString()}">
    ${ran.map(
      (j) =>
        html`<li>
          <a href="#${j.id}" class="timeline-name">${emojify(jobName(j), v.emojis)}${parallelLabel(j)}</a>
          <span class="timeline-track"
            ><span class="timeline-bar tone-${stateLook(j.state).tone}" data-from="${secs(j.startedAt)}" data-to="${secs(j.finishedAt)}"></span
          ></span>
          <span class="muted">${duration(j.startedAt, j.finishedAt)}</span>
        </li>`,
    )}
  </ol>`;
}

function keyValues(values: Record<string, string>, empty: string): Part {
  const keys = Object.keys(values).sort();
  if (!keys.length) return html`<p class="muted">${empty}</p>`;
  return table(
    ['Key', 'Value'],
    keys.map(
      (k) =>
        html`<tr>
          <td><code>${k}</code></td>
          <td><code>${values[k]}</code></td>
        </tr>`,
    ),
  );
}

/** The parts of the page that change as the build runs: assets/build.js swaps them in place from a fresh copy of the page. */
function liveRegions(v: BuildPageView, base: string) {
  const { build, jobs } = v.item;
  const { earlier, hidden } = attemptsOf(jobs);
  const shown = jobs.filter((j) => !hidden.has(j.id));
  const open = logsOpenedByDefault(jobs, hidden);
  const blockedOn = build.blocked ? shown.find((j) => j.type === 'manual' && j.state === 'blocked') : undefined;
  const blockStep = blockedOn?.step.type === 'manual' ? blockedOn.step : null;
  const banner = blockedOn
    ? html`<div class="blocked-banner" role="status">
        <p>
          <strong>Blocked</strong> on <a href="#${blockedOn.id}">${emojify(jobName(blockedOn), v.emojis)}</a>${
            blockStep?.prompt ? html`: ${emojify(blockStep.prompt, v.emojis)}` : ''
          }
        </p>
        ${v.unblockable.has(blockedOn.id) ? html`<p><a class="button" href="#${blockedOn.id}">Unblock</a></p>` : ''}
      </div>`
    : '';
  const pipeline = v.item.pipeline;
  const actions = v.canWrite
    ? html`${CANCELABLE_BUILD_STATES.includes(build.state) ? postButton(v.ctx, `${base}/cancel`, 'Cancel build', { secondary: true }) : ''}${
        pipeline.allowRebuilds ? postButton(v.ctx, `${base}/rebuild`, 'Rebuild') : ''
      }`
    : '';
  return {
    status: html`${buildBadge(build)}`,
    banner,
    actions,
    graph: stepGraph(v, shown),
    jobs: shown.map((j) => jobRow(v, base, j, open.has(j.id), earlier.get(j.id) ?? [])),
    timeline: timeline(v, shown),
    count: jobs.length,
  };
}

export function buildPage(v: BuildPageView): string {
  const { build, pipeline } = v.item;
  const org = v.ctx.orgSlug!;
  const base = `/${org}/${pipeline.slug}/builds/${build.number}`;
  const r = liveRegions(v, base);
  return layout(
    v.ctx,
    `${pipeline.name} #${build.number}`,
    html`<div class="build-page" data-build-id="${build.id}" data-state-url="${base}/state" data-events-url="${base}/events" data-job-count="${r.count}">
      <p class="muted"><a href="/${org}">${v.item.actor.organization.name}</a> / <a href="/${org}/${pipeline.slug}">${pipeline.name}</a></p>
      <h1>${build.message ? emojify(build.message, v.emojis) : `Build #${build.number}`} <span class="muted">#${build.number}</span></h1>
      <p>
        <span data-region="status" data-build-badge data-state="${build.state}/${String(build.blocked)}">${r.status}</span>
        <span data-live-status role="status"></span>
      </p>
      <div data-region="banner">${r.banner}</div>
      <dl class="facts">
        <dt>Branch</dt>
        <dd>${build.branch}</dd>
        <dt>Commit</dt>
        <dd><code title="${build.commit}">${build.commit.slice(0, 12)}</code></dd>
        <dt>Created by</dt>
        <dd>${build.creator?.name ?? build.author?.name ?? '–'}</dd>
        <dt>Created</dt>
        <dd>${time(build.createdAt)}</dd>
        <dt>Duration</dt>
        <dd data-build-duration data-started="${build.startedAt?.toISOString() ?? ''}" data-finished="${build.finishedAt?.toISOString() ?? ''}">
          ${duration(build.startedAt, build.finishedAt)}
        </dd>
        ${
          build.rebuiltFrom
            ? html`<dt>Rebuilt from</dt>
                <dd><a href="/${org}/${pipeline.slug}/builds/${build.rebuiltFrom.number}">#${build.rebuiltFrom.number}</a></dd>`
            : ''
        }
      </dl>
      <div class="actions" data-region="actions">${r.actions}</div>
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
      <h2>Steps</h2>
      <div data-region="graph">${r.graph}</div>
      <h2>Jobs</h2>
      <ol class="jobs" data-region="jobs">
        ${r.jobs}
      </ol>
      <div class="tabs" data-tabs>
        <section class="tab-panel" id="tab-timeline" aria-labelledby="tab-timeline-h">
          <h2 id="tab-timeline-h">Timeline</h2>
          <div data-region="timeline">${r.timeline}</div>
        </section>
        <section class="tab-panel" id="tab-meta-data" aria-labelledby="tab-meta-data-h">
          <h2 id="tab-meta-data-h">Meta-data</h2>
          ${keyValues(build.metaData, 'No meta-data.')}
        </section>
        <section class="tab-panel" id="tab-environment" aria-labelledby="tab-environment-h">
          <h2 id="tab-environment-h">Environment</h2>
          ${keyValues(build.env, 'No environment variables set on the build.')}
        </section>
        <section class="tab-panel" id="tab-artifacts" aria-labelledby="tab-artifacts-h">
          <h2 id="tab-artifacts-h">Artifacts</h2>
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
            html`<p class="muted">No artifacts.</p>`,
          )}
        </section>
      </div>
    </div>`,
    { scripts: ['log.js', 'build.js'] },
  );
}

/** `field:<key>` inputs of an unblock form -> the step's `fields` (a multiple select gives several values). */
function unblockFields(body: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) {
    if (!k.startsWith('field:')) continue;
    const value = Array.isArray(v) ? v.map(String).join('\n') : String(v);
    if (value.length > 65536) throw ValidationError.field(k.slice(6), 'is too long');
    // An empty value is the user's (the step's default was in the field): kept, as the page's form sends it.
    out[k.slice(6)] = value;
  }
  return out;
}

export function registerBuildPages(web: WebRouter): void {
  const { builds, jobs, agents, annotations, artifacts, emojis, publicUrl } = web.deps;

  web.page('/:org/:pipeline/builds/:number', 'getBuild', async ({ principal, params, ctx, res }) => {
    const actor = actorFor(principal, params.org!);
    const item = await builds.get(actor, params.pipeline!, buildNumber(params.number), true, { pipeline: true });
    const waiting = item.jobs.some((j) => j.type === 'script' && !j.agentId && JOB_STATE_PHASES[j.state] === 'queued');
    const [agentsById, notes, files, emojiList, orgAgents] = await Promise.all([
      agentsOfJobs(agents, item.jobs),
      annotations.list({ item, job: null }, 0, 100, 'all'),
      mayCall(principal, 'listBuildArtifacts')
        ? artifacts.listByBuild(actor, item.pipeline.slug, item.build.number, {}, 0, 100).then((r) => r.items)
        : Promise.resolve([]),
      emojis.list(actor.organization.id),
      waiting && mayCall(principal, 'listAgents') ? agents.list(actor, {}, 0, 1000) : Promise.resolve(null),
    ]);
    const unblockable = mayCall(principal, 'unblockJob') ? await jobs.unblockable(actor, item) : new Set<string>();
    const custom = customEmojis(emojiList);
    res.locals.imageOrigins = emojiOrigins(custom);
    return buildPage({
      ctx,
      item,
      agents: agentsById,
      annotations: notes,
      artifacts: files,
      canWrite: mayCall(principal, 'cancelBuild') && item.perms.build,
      unblockable,
      canReadLogs: mayCall(principal, 'getJobLog'),
      emojis: custom,
      connected: orgAgents ? orgAgents.filter(isLive) : null,
    });
  });

  // The page's fallback when the live stream is not there: the build's and its jobs' states, one request for the whole page.
  web.data('/:org/:pipeline/builds/:number/state', 'getBuild', async ({ principal, params, res }) => {
    const actor = actorFor(principal, params.org!);
    const item = await builds.get(actor, params.pipeline!, buildNumber(params.number), true, { pipeline: true });
    res.json(buildStateJson(item.build, item.jobs, await agentsOfJobs(agents, item.jobs)));
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
    const item = await builds.rebuild(actor, ...target(params), 'ui');
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
    res.redirect(302, await artifacts.publicContentUrl(publicUrl, artifact, DOWNLOAD_URL_SECONDS));
  });
  // Where an annotation's `artifact://path` goes: the build's newest uploaded artifact with that path.
  web.data('/:org/:pipeline/builds/:number/artifacts', 'listBuildArtifacts', async ({ principal, params, query, res }) => {
    const actor = actorFor(principal, params.org!);
    const path = query.path ?? '';
    if (path === '' || path.length > 4096) throw new NotFoundError('artifact');
    const [pipelineSlug, number] = target(params);
    const artifact = await artifacts.downloadableByPath(actor, { pipelineSlug, number }, path);
    res.redirect(302, await artifacts.publicContentUrl(publicUrl, artifact, DOWNLOAD_URL_SECONDS));
  });
}
