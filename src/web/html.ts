/**
 * HTML by tagged template: every interpolated value is escaped unless it is already `Html`
 * (built by this tag, or `trustedHtml` for markup the API sanitised itself). Arrays join, and
 * null, undefined and false render nothing, so templates can map and branch inline.
 */
import { escapeHtml } from '../core/escape-html';

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Part = Html | string | number | null | undefined | false | readonly Part[];

export { escapeHtml };

function render(p: Part): string {
  if (p === null || p === undefined || p === false) return '';
  if (p instanceof Html) return p.value;
  if (Array.isArray(p)) return p.map(render).join('');
  return escapeHtml(String(p));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup that is already safe: only for HTML the API sanitised (annotation bodies) or built here. */
export function trustedHtml(s: string): Html {
  return new Html(s);
}
