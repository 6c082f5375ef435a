/**
 * `:shortcode:` emoji in step labels, build messages and annotations' headings, as the real
 * service shows them: the standard shortcodes as Unicode (node-emoji, over emojilib's
 * maintained dataset), the organization's custom emojis (src/emojis/, by name or alias) as
 * images. Everything else stays text, escaped.
 */
import { get as standardEmoji } from 'node-emoji';
import type { Emoji } from '../emojis/repository';
import { html, type Html } from './html';

/** An organization's custom emojis by name and alias -> the image's URL. */
export type CustomEmojis = ReadonlyMap<string, string>;

export function customEmojis(list: readonly Emoji[]): CustomEmojis {
  const out = new Map<string, string>();
  for (const e of list) for (const name of [e.name, ...e.aliases]) out.set(name, e.url);
  return out;
}

/** The origins of the custom emojis' images (the page's image policy allows them). */
export function emojiOrigins(custom: CustomEmojis): string[] {
  const origins = new Set<string>();
  for (const url of custom.values()) {
    try {
      const u = new URL(url);
      if (u.protocol === 'https:' || u.protocol === 'http:') origins.add(u.origin);
    } catch {
      // Stored URLs were checked on the way in; one that no longer parses shows as its name.
    }
  }
  return [...origins];
}

const SHORTCODE = /:([\w+-]{1,100}):/g;

/** `text` with its shortcodes rendered: custom ones first (an organization may shadow a standard name), then standard ones. */
export function emojify(text: string, custom: CustomEmojis = new Map()): Html {
  const parts: (Html | string)[] = [];
  let last = 0;
  for (const m of text.matchAll(SHORTCODE)) {
    const name = m[1]!;
    const url = custom.get(name);
    const unicode = url ? undefined : standardEmoji(name);
    if (!url && !unicode) continue;
    parts.push(text.slice(last, m.index));
    parts.push(
      url
        ? html`<img class="emoji" src="${url}" alt=":${name}:" title=":${name}:" />`
        : html`<span class="emoji" role="img" aria-label="${name.replace(/_/g, ' ')}">${unicode}</span>`,
    );
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return html`${parts}`;
}
