/**
 * The standard emojis an organization's list shows beside its own (emojis.md: "all the emojis for
 * a given organization, including custom emojis and aliases"; its example starts with the Unicode
 * `rocket`): every shortcode node-emoji knows (emojilib's maintained dataset, the one the web
 * pages render `:name:` with), each with the image URL the docs' example gives a Unicode emoji,
 * `https://buildkiteassets.com/emoji/unicode/<code points>.png?v1`. The server never fetches it:
 * it is what a client that displays emojis is told, as the real API tells it.
 */
import { search } from 'node-emoji';

export interface StandardEmoji {
  name: string;
  url: string;
}

let standard: readonly StandardEmoji[] | undefined;

/** The standard emojis, in node-emoji's order; built once. */
export function standardEmojis(): readonly StandardEmoji[] {
  standard ??= search('').map(({ name, emoji }) => ({ name, url: `https://buildkiteassets.com/emoji/unicode/${codePoints(emoji)}.png?v1` }));
  return standard;
}

/** `1f680` for 🚀; a sequence's code points joined by `-`, without the emoji presentation selector (FE0F). */
function codePoints(emoji: string): string {
  return [...emoji]
    .map((c) => (c.codePointAt(0) ?? 0).toString(16))
    .filter((c) => c !== 'fe0f')
    .join('-');
}
