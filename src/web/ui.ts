/** The page shell and the small pieces every page uses: state badges, times, durations, forms with their CSRF token. */
import type { Principal } from '../core/identity';
import { clock } from '../core/clock';
import { html, type Html, type Part } from './html';
import type { Assets } from './assets';

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

export function stateBadge(state: string | null | undefined): Html {
  const s = state ?? 'none';
  return html`<span class="state state-${s.replace(/[^a-z_]/g, '')}">${s.replace(/_/g, ' ')}</span>`;
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
