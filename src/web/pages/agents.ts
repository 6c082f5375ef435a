/** The organization's agents (connected, busy, paused) with the job each holds; one agent's page, with pause and resume. */
import type { Agent } from '../../agents/repository';
import { isLive } from '../../agents/service';
import type { JobContext } from '../../builds/jobs/model';
import { clock } from '../../core/clock';
import { actorFor, idParam } from '../context';
import { can } from '../permissions';
import { html } from '../html';
import type { WebRouter } from '../routes';
import { layout, postButton, stateBadge, table, time, type PageContext } from '../ui';

/**
 * How long an agent that went away (disconnected, lost, stopped) stays listed: the real API lists
 * only connected agents; the page keeps those gone in the last hour so a crash is still seen.
 * Older ones are hidden behind a link (their own pages stay, as the API's get answers any agent).
 */
export const GONE_LISTED_MS = 60 * 60_000;
/** How many agents the list reads, newest first: enough to find the live ones among the gone. */
const LIST_LIMIT = 500;

/** When the agent went away: the latest of its disconnect, loss, stop and last sign of life (its registration, if none). */
function goneAt(a: Agent): number {
  return Math.max(
    a.disconnectedAt?.getTime() ?? 0,
    a.lostAt?.getTime() ?? 0,
    a.stoppedAt?.getTime() ?? 0,
    a.lastHeartbeatAt?.getTime() ?? 0,
    a.createdAt.getTime(),
  );
}

/** Listed by default: live, or gone within GONE_LISTED_MS. */
export function listedByDefault(a: Agent, now = clock.nowMs()): boolean {
  return isLive(a) || now - goneAt(a) < GONE_LISTED_MS;
}

function status(a: Agent): string {
  if (!isLive(a)) return a.connectionState;
  if (a.pause && a.pause.until.getTime() > clock.nowMs()) return 'paused';
  return a.jobId ? 'busy' : 'idle';
}

/** A job as a link to it on its build's page. */
function jobAnchor(c: JobContext) {
  return html`<a href="/${c.orgSlug}/${c.pipelineSlug}/builds/${c.build.number}#${c.job.id}"
    >${c.pipelineSlug} #${c.build.number}: ${c.job.name ?? c.job.command ?? 'job'}</a
  >`;
}

function jobLink(held: Map<string, JobContext>, a: Agent) {
  const c = a.jobId ? held.get(a.jobId) : undefined;
  return c ? jobAnchor(c) : html`<span class="muted">–</span>`;
}

export function registerAgentPages(web: WebRouter): void {
  const { agents, agentWork } = web.deps;

  web.page('/organizations/:org/agents', 'listAgents', async ({ principal, params, query, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const all = await agents.list(actor, {}, 0, LIST_LIMIT);
    const showAll = query.all === '1';
    const list = showAll ? all : all.filter((a) => listedByDefault(a));
    const hidden = all.length - list.length;
    const held = await agentWork.heldJobs(list);
    const live = list.filter(isLive);
    const base = `/organizations/${actor.organization.slug}/agents`;
    const count = (s: string) => live.filter((a) => status(a) === s).length;
    return layout(
      ctx,
      'Agents',
      html`<h1>Agents</h1>
        <p>${live.length} connected: ${count('busy')} busy, ${count('idle')} idle, ${count('paused')} paused.</p>
        ${
          hidden
            ? html`<p class="muted">
                ${hidden} ${hidden === 1 ? 'agent' : 'agents'} gone for more than an hour (disconnected, lost or stopped) not shown.
                <a href="${base}?all=1">Show every agent</a>
              </p>`
            : showAll
              ? html`<p class="muted"><a href="${base}">Hide agents gone for more than an hour</a></p>`
              : ''
        }
        ${table(
          ['Agent', 'Status', 'Job', { label: 'Host', optional: true }, { label: 'Tags', optional: true }],
          list.map(
            (a) =>
              html`<tr>
                <td><a href="/organizations/${actor.organization.slug}/agents/${a.id}">${a.name}</a></td>
                <td>${stateBadge(status(a))}</td>
                <td>${jobLink(held, a)}</td>
                <td class="cols-optional">${a.hostname ?? '–'}</td>
                <td class="cols-optional">${a.metaData.join(', ')}</td>
              </tr>`,
          ),
          html`<p>No agents have registered yet. Start one with <code>windsock agent</code> or the Buildkite agent.</p>`,
        )}`,
    );
  });

  const agentPage = async (ctx: PageContext, principal: Parameters<typeof actorFor>[0], orgSlug: string, id: string) => {
    const actor = actorFor(principal, orgSlug);
    const a = await agents.get(actor, idParam(id, 'agent'));
    const held = await agentWork.heldJobs([a]);
    const recent = await agentWork.recentJobs(a);
    const base = `/organizations/${actor.organization.slug}/agents/${a.id}`;
    const s = status(a);
    return layout(
      ctx,
      a.name,
      html`<p class="muted"><a href="/organizations/${actor.organization.slug}/agents">Agents</a></p>
        <h1>${a.name}</h1>
        <p>${stateBadge(s)}</p>
        ${
          can(ctx, s === 'paused' ? 'resumeAgent' : 'pauseAgent') && isLive(a)
            ? html`<div class="actions">
                ${s === 'paused' ? postButton(ctx, `${base}/resume`, 'Resume') : postButton(ctx, `${base}/pause`, 'Pause', { secondary: true })}
              </div>`
            : ''
        }
        <dl class="facts">
          <dt>Job</dt>
          <dd>${jobLink(held, a)}</dd>
          <dt>Hostname</dt>
          <dd>${a.hostname ?? '–'}</dd>
          <dt>Version</dt>
          <dd>${a.version ?? '–'}</dd>
          <dt>OS</dt>
          <dd>${a.os ?? '–'} ${a.arch ?? ''}</dd>
          <dt>Tags</dt>
          <dd>${a.metaData.join(', ') || '–'}</dd>
          <dt>Connected</dt>
          <dd>${time(a.connectedAt)}</dd>
          <dt>Last job finished</dt>
          <dd>${time(a.lastJobFinishedAt)}</dd>
          ${
            a.pause
              ? html`<dt>Paused</dt>
                  <dd>${time(a.pause.at)} until ${time(a.pause.until)}${a.pause.note ? html` (${a.pause.note})` : ''}</dd>`
              : ''
          }
        </dl>
        <h2>Jobs</h2>
        ${table(
          ['Job', 'State', { label: 'Started', optional: true }, { label: 'Finished', optional: true }],
          recent.map(
            (c) =>
              html`<tr>
                <td>${jobAnchor(c)}</td>
                <td>${stateBadge(c.job.state)}</td>
                <td class="cols-optional">${time(c.job.startedAt)}</td>
                <td class="cols-optional">${time(c.job.finishedAt)}</td>
              </tr>`,
          ),
          html`<p>This agent has run no job yet.</p>`,
        )}`,
    );
  };
  web.page('/organizations/:org/agents/:id', 'getAgent', ({ principal, params, ctx }) => agentPage(ctx, principal, params.org!, params.id!));
  // A cluster's agent: its web_url names its cluster and queue.
  web.page('/organizations/:org/clusters/:cluster/queues/:queue/agents/:id', 'getAgent', ({ principal, params, ctx }) =>
    agentPage(ctx, principal, params.org!, params.id!),
  );

  web.action('/organizations/:org/agents/:id/pause', 'pauseAgent', async ({ principal, params }) => {
    const actor = actorFor(principal, params.org!);
    await agents.pause(actor, idParam(params.id, 'agent'), {});
    return `/organizations/${actor.organization.slug}/agents/${params.id!}`;
  });
  web.action('/organizations/:org/agents/:id/resume', 'resumeAgent', async ({ principal, params }) => {
    const actor = actorFor(principal, params.org!);
    await agents.resume(actor, idParam(params.id, 'agent'));
    return `/organizations/${actor.organization.slug}/agents/${params.id!}`;
  });
}
