/** The page shell and the small pieces every page uses: state badges, times, durations, forms with their CSRF token. */
import type { Principal } from '../core/identity';
import { clock } from '../core/clock';
import { html, type Html, type Part } from './html';
import type { Assets } from './assets';
import type { BuildState, JobState } from '../builds/model';
import type { ConnectionState } from '../agents/repository';

/** What a page knows of its request: who is signed in, the session's CSRF token, the org in the path. */
export interface PageContext {
  principal: Principal | null;
  csrf: string;
  assets: Assets;
  orgSlug?: string;
  /** The path asked for (sign-in comes back to it). */
  path: string;
}

export function layout(ctx: PageContext, title: string, body: Html, opts: { scripts?: string[] } = {}): string {
  const org = ctx.orgSlug;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Windsock</title>
        <link rel="stylesheet" href="${ctx.assets.url('app.css')}" />
        <link rel="icon" type="image/svg+xml" href="${ctx.assets.url('favicon.svg')}" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="${org ? `/${org}` : '/login'}">Windsock</a>
          ${
            ctx.principal
              ? html`<nav aria-label="Main">
                    <ul>
                      ${
                        org
                          ? html`<li><a href="/${org}">Pipelines</a></li>
                              <li><a href="/organizations/${org}/agents">Agents</a></li>
                              <li><a href="/organizations/${org}/analytics">Test suites</a></li>`
                          : ''
                      }
                    </ul>
                  </nav>
                  <form method="post" action="/logout">
                    ${csrfField(ctx)}<span class="visually-hidden">Signed in as </span><span>${ctx.principal.user.name}</span>
                    <button type="submit">Sign out</button>
                  </form>`
              : ''
          }
        </header>
        <main id="main">${body}</main>
        ${(opts.scripts ?? []).map((s) => html`<script src="${ctx.assets.url(s)}" defer></script>`)}
      </body>
    </html>`.value;
}

export function csrfField(ctx: Pick<PageContext, 'csrf'>): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}" />`;
}

/** A form that is only a button: POST to `action` with the CSRF token. */
export function postButton(ctx: PageContext, action: string, label: string, opts: { secondary?: boolean; name?: string } = {}): Html {
  return html`<form class="inline" method="post" action="${action}">
    ${csrfField(ctx)}<button type="submit" ${opts.secondary ? html` class="secondary"` : ''}${opts.name ? html` aria-label="${opts.name}"` : ''}>
      ${label}
    </button>
  </form>`;
}

/** How a state reads: the real service's word for it, its tone (colour), its icon, and what it means when the word alone is not enough. */
interface StateLook {
  label: string;
  tone: 'pass' | 'fail' | 'run' | 'wait' | 'block' | 'off';
  title?: string;
}

const ICONS: Record<StateLook['tone'], string> = { pass: '\u2713', fail: '\u2715', run: '\u25cf', wait: '\u25cb', block: '\u2016', off: '\u2013' };

/** An agent's state as its pages show it (pages/agents.ts): its connection's, or what a connected one is doing. */
type AgentShownState = ConnectionState | 'busy' | 'idle' | 'paused';

/**
 * Every build, job and agent state the pages show (builds/states.ts names them), as people read
 * them: the compiler holds it to every state of the contract, and a state that job and build
 * share (running, passed, ...) reads the same on both.
 */
const STATES: Record<string, StateLook> = {
  passed: { label: 'Passed', tone: 'pass' },
  failed: { label: 'Failed', tone: 'fail' },
  failing: { label: 'Failing', tone: 'fail', title: 'A job failed; others are still running' },
  running: { label: 'Running', tone: 'run' },
  scheduled: { label: 'Scheduled', tone: 'wait', title: 'Waiting for an agent' },
  creating: { label: 'Creating', tone: 'wait' },
  blocked: { label: 'Blocked', tone: 'block', title: 'Waiting for someone to unblock it' },
  unblocked: { label: 'Unblocked', tone: 'pass' },
  canceling: { label: 'Canceling', tone: 'run' },
  canceled: { label: 'Canceled', tone: 'off' },
  skipped: { label: 'Skipped', tone: 'off' },
  not_run: { label: 'Not run', tone: 'off' },
  pending: { label: 'Pending', tone: 'wait' },
  waiting: { label: 'Waiting', tone: 'wait', title: 'Waiting for the steps before it' },
  waiting_failed: { label: 'Not run', tone: 'off', title: 'It was waiting when the build failed' },
  blocked_failed: { label: 'Not run', tone: 'off', title: 'It was blocked when the build failed' },
  unblocked_failed: { label: 'Not run', tone: 'off', title: 'It was unblocked after the build failed' },
  limiting: { label: 'Limiting', tone: 'wait', title: 'Checking its concurrency group' },
  limited: { label: 'Limited', tone: 'wait', title: 'Waiting for jobs of its concurrency group to finish' },
  assigned: { label: 'Assigned', tone: 'run', title: 'An agent took it and has not started it yet' },
  accepted: { label: 'Accepted', tone: 'run', title: 'Its agent is starting it' },
  timing_out: { label: 'Timing out', tone: 'fail' },
  timed_out: { label: 'Timed out', tone: 'fail' },
  expired: { label: 'Expired', tone: 'fail', title: 'No agent took it in time' },
  broken: { label: 'Broken', tone: 'off', title: 'Its step could not run' },
  // Agents.
  connected: { label: 'Connected', tone: 'pass' },
  busy: { label: 'Busy', tone: 'run' },
  idle: { label: 'Idle', tone: 'pass' },
  paused: { label: 'Paused', tone: 'block' },
  disconnected: { label: 'Disconnected', tone: 'off' },
  stopping: { label: 'Stopping', tone: 'run' },
  stopped: { label: 'Stopped', tone: 'off' },
  lost: { label: 'Lost', tone: 'fail', title: 'It stopped sending heartbeats' },
  never_connected: { label: 'Never connected', tone: 'off' },
} satisfies Record<JobState | BuildState | AgentShownState, StateLook> & Record<string, StateLook>;

/** The look of `state`: a known one's, else its words capitalised (a state added later still reads). */
export function stateLook(state: string | null | undefined): StateLook & { key: string } {
  const key = (state ?? 'none').replace(/[^a-z_]/g, '');
  const known = STATES[key];
  if (known) return { ...known, key };
  const words = key.replace(/_/g, ' ');
  return { label: words.charAt(0).toUpperCase() + words.slice(1), tone: 'off', key };
}

/** A state as a badge: its icon and word, coloured by its tone (`state-<state>` names it for tests and styles). */
export function stateBadge(state: string | null | undefined): Html {
  const look = stateLook(state);
  return html`<span class="state state-${look.key} tone-${look.tone}" ${look.title ? html` title="${look.title}"` : ''}
    ><span class="state-icon" aria-hidden="true">${ICONS[look.tone]}</span> ${look.label}</span
  >`;
}

/**
 * What a build's state is for people: `blocked` while nothing moves until someone unblocks a
 * block step (the API says `passed`, or `scheduled` when the block step comes first, with
 * `blocked: true`); a build still running other jobs says running, one that failed says failed.
 */
export function buildState(b: { state: string; blocked: boolean }): string {
  return b.blocked && (b.state === 'passed' || b.state === 'scheduled') ? 'blocked' : b.state;
}

/** The badge of a build: blocked while it waits on a block step. */
export function buildBadge(b: { state: string; blocked: boolean }): Html {
  return stateBadge(buildState(b));
}

export function time(d: Date | null | undefined): Part {
  if (!d) return html`<span class="muted">–</span>`;
  const iso = d.toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>`;
}

/** `1h 2m`, `3m 4s`, `5s`: from start to end, or to now while running. */
export function duration(start: Date | null | undefined, end: Date | null | undefined): string {
  if (!start) return '–';
  let s = Math.max(0, Math.round(((end ? end.getTime() : clock.nowMs()) - start.getTime()) / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

export function notice(text: string | undefined, kind: 'info' | 'error' = 'info'): Part {
  return text ? html`<p class="notice${kind === 'error' ? ' error' : ''}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>` : '';
}

/** A table's column heading; an `optional` one (its cells carry `cols-optional` too) hides on narrow screens. */
export type Column = string | { label: string; optional: true };

/** A table of `rows` (each a `<tr>`) under these headings, scrolling sideways in its wrapper; `empty` when there are no rows. */
export function table(columns: Column[], rows: readonly Part[], empty: Part = ''): Part {
  if (!rows.length) return empty;
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          ${columns.map((c) => (typeof c === 'string' ? html`<th scope="col">${c}</th>` : html`<th scope="col" class="cols-optional">${c.label}</th>`))}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

/** Previous/next links for a list page: `page` is 1-based, `more` whether a next page exists. */
export function pagination(basePath: string, query: Record<string, string | undefined>, page: number, more: boolean): Part {
  const link = (p: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
    q.set('page', String(p));
    return `${basePath}?${q.toString()}`;
  };
  if (page <= 1 && !more) return '';
  return html`<nav class="pagination" aria-label="Pagination">
    ${page > 1 ? html`<a href="${link(page - 1)}" rel="prev">Previous</a>` : ''}${more ? html`<a href="${link(page + 1)}" rel="next">Next</a>` : ''}<span
      class="muted"
      >Page ${page}</span
    >
  </nav>`;
}
