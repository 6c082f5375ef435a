/**
 * Pipeline slugs: the URL-safe name a pipeline is addressed by
 * (`/v2/organizations/{org}/pipelines/{slug}`), derived from its name the way the real API does.
 */

export const MAX_SLUG_LENGTH = 100;

// Letters that NFKD leaves alone because they are not "letter + accent" in Unicode, yet have a
// conventional ASCII spelling. Without this, "Øresund" would lose its first letter.
const TRANSLITERATIONS: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ł: 'l',
  ħ: 'h',
  ı: 'i',
};

const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function slugify(name: string): string {
  // Callers pass request bodies through here; junk must give "" (a validation error), not a crash.
  if (typeof name !== 'string') return '';
  const ascii = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[ßæœøđðþłħı]/g, (c) => TRANSLITERATIONS[c] ?? '-');
  const slug = ascii.replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  // Cutting can land just after a separator, which would leave a slug ending in `-`.
  return slug.slice(0, MAX_SLUG_LENGTH).replace(/-$/, '');
}

/** True for exactly the strings `slugify` can produce (except ""), e.g. for an explicit `slug`. */
export function isValidSlug(s: string): boolean {
  return typeof s === 'string' && s.length >= 1 && s.length <= MAX_SLUG_LENGTH && SLUG_PATTERN.test(s);
}

/** An explicit pipeline `slug`, as the real API takes it: letters, digits and dashes, not starting with a dash. */
export function isValidPipelineSlug(s: string): boolean {
  return typeof s === 'string' && s.length <= MAX_SLUG_LENGTH && /^[a-zA-Z0-9][a-zA-Z0-9-]*$/.test(s);
}
