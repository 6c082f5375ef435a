/**
 * An organization's custom emojis: the list the API answers (`GET .../emojis`, an empty list when
 * it has none) and adding one (`windsock emoji add`). A name or alias is what `:name:` in a step
 * label or log group names, so it matches the docs' pattern `[\w+-]+` and is unique within the
 * organization across names and aliases. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import { ValidationError, type FieldError } from '../core/errors';
import type { Emoji, EmojiRepository } from './repository';
import { clock } from '../core/clock';
import { standardEmojis } from './standard';

const NAME = /^[\w+-]{1,100}$/;
export const MAX_ALIASES = 20;

export interface EmojiInput {
  name: string;
  url: string;
  aliases?: string[];
}

export class EmojiService {
  constructor(private readonly emojis: EmojiRepository) {}

  /** The organization's own emojis, by name. */
  list(organizationId: string): Promise<Emoji[]> {
    return this.emojis.list(organizationId);
  }

  /**
   * What the API lists: the standard emojis (./standard.ts), then the organization's own; a name
   * one of its own takes (as a name or an alias) is its own.
   */
  async listed(organizationId: string): Promise<Pick<Emoji, 'name' | 'url' | 'aliases'>[]> {
    const own = await this.emojis.list(organizationId);
    const taken = new Set(own.flatMap((e) => [e.name, ...e.aliases]));
    return [...standardEmojis().flatMap((e) => (taken.has(e.name) ? [] : [{ ...e, aliases: [] }])), ...own];
  }

  async add(organizationId: string, input: EmojiInput): Promise<Emoji> {
    const errors: FieldError[] = [];
    const name = input.name.trim().replace(/^:(.*):$/, '$1');
    if (!NAME.test(name)) errors.push({ field: 'name', code: 'must be 1 to 100 letters, digits, _, + or - (what :name: matches)' });
    const url = input.url.trim();
    if (!isWebUrl(url)) errors.push({ field: 'url', code: 'must be an http or https URL of at most 2000 characters' });
    const aliases = [...new Set((input.aliases ?? []).map((a) => a.trim().replace(/^:(.*):$/, '$1')).filter((a) => a && a !== name))];
    if (aliases.length > MAX_ALIASES) errors.push({ field: 'aliases', code: `at most ${MAX_ALIASES}` });
    for (const a of aliases) if (!NAME.test(a)) errors.push({ field: 'aliases', code: `"${a}" must be 1 to 100 letters, digits, _, + or -` });
    if (!errors.length) {
      const taken = new Set((await this.emojis.list(organizationId)).flatMap((e) => [e.name, ...e.aliases]));
      for (const n of [name, ...aliases])
        if (taken.has(n)) errors.push({ field: n === name ? 'name' : 'aliases', code: `"${n}" is already an emoji of this organization` });
    }
    if (errors.length) throw new ValidationError(errors);
    const emoji: Emoji = { id: crypto.randomUUID(), organizationId, name, url, aliases, createdAt: clock.now() };
    await this.emojis.insert(emoji);
    return emoji;
  }
}

function isWebUrl(value: string): boolean {
  if (value.length > 2000) return false;
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
