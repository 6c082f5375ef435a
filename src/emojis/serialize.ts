import type { components } from '../../generated/api';
import type { Emoji } from './repository';

/** As the docs show one: `aliases` only when the emoji has some. */
export function serializeEmoji(e: Pick<Emoji, 'name' | 'url' | 'aliases'>): components['schemas']['Emoji'] {
  return e.aliases.length ? { name: e.name, url: e.url, aliases: e.aliases } : { name: e.name, url: e.url };
}
