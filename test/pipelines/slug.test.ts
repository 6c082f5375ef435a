/** Slugs derived from pipeline names, and the check applied to an explicit `slug`. */

import { isValidSlug, slugify } from '../../src/pipelines/slug';

describe('slugify', () => {
  it.each([
    ['My Pipeline X', 'my-pipeline-x'],
    ['my-pipeline', 'my-pipeline'],
    ['UPPER lower', 'upper-lower'],
    ['  padded  ', 'padded'],
    ['many     spaces', 'many-spaces'],
    ['tabs\tand\nnewlines', 'tabs-and-newlines'],
    ['a -- b', 'a-b'],
    ['---dashes---', 'dashes'],
    ['under_score.dot/slash', 'under-score-dot-slash'],
    ['Deploy (prod) :rocket:', 'deploy-prod-rocket'],
    ['v1.2.3', 'v1-2-3'],
    ['123', '123'],
    ['a', 'a'],
    ['!@#abc$%^', 'abc'],
  ])('%j -> %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it.each([
    ['Café', 'cafe'],
    ['Crème Brûlée', 'creme-brulee'],
    ['Ångström Ñandú', 'angstrom-nandu'],
    ['ÀÉÎÕÜ', 'aeiou'],
    ['Straße', 'strasse'],
    ['Øresund Æble', 'oresund-aeble'],
    ['Łódź', 'lodz'],
    ['İstanbul', 'istanbul'],
    ['ﬁle', 'file'], // compatibility ligature, handled by NFKD
    ['ｆｕｌｌｗｉｄｔｈ', 'fullwidth'],
  ])('transliterates %j -> %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it('turns non-Latin scripts and emoji into separators', () => {
    expect(slugify('build 🚀 東京 app')).toBe('build-app');
  });

  it.each(['', '   ', '---', '🚀', '東京', '!!!'])('gives "" for %j, which has nothing sluggable', (name) => {
    expect(slugify(name)).toBe('');
  });

  it('cuts at 100 characters', () => {
    expect(slugify('a'.repeat(150))).toBe('a'.repeat(100));
    expect(slugify('a'.repeat(100))).toBe('a'.repeat(100));
  });

  it('drops a trailing "-" left by the cut', () => {
    const name = `${'a'.repeat(99)} bcd`;
    expect(slugify(name)).toBe('a'.repeat(99));
  });

  it('keeps a separator that falls inside the limit', () => {
    const name = `${'a'.repeat(98)} bcd`;
    expect(slugify(name)).toBe(`${'a'.repeat(98)}-b`);
  });

  it('counts the limit after collapsing separators', () => {
    const name = `${'a '.repeat(60)}`;
    const slug = slugify(name);
    expect(slug).toBe(Array(50).fill('a').join('-'));
    expect(slug.length).toBe(99);
  });

  it('never throws on non-strings that slip through from request bodies', () => {
    for (const junk of [undefined, null, 42, {}, []]) {
      expect(slugify(junk as unknown as string)).toBe('');
    }
  });

  it('always produces a valid slug or ""', () => {
    const names = ['Café Ü', 'x'.repeat(300), ' - a - ', 'Ωmega 42', `${'é'.repeat(99)}!z`, 'a\u0301b'];
    for (const name of names) {
      const slug = slugify(name);
      expect(slug === '' || isValidSlug(slug)).toBe(true);
    }
  });

  it('is idempotent', () => {
    for (const name of ['My Pipeline', 'Café', 'a--b', 'x'.repeat(120)]) {
      expect(slugify(slugify(name))).toBe(slugify(name));
    }
  });
});

describe('isValidSlug', () => {
  it.each(['a', 'my-pipeline', 'v1-2-3', '123', 'a'.repeat(100), 'a-b-c-d'])('accepts %j', (s) => {
    expect(isValidSlug(s)).toBe(true);
  });

  it.each(['', 'a'.repeat(101), 'My-Pipeline', '-leading', 'trailing-', 'double--dash', 'under_score', 'dot.ted', 'sp ace', 'café', ' a', 'a\n'])(
    'rejects %j',
    (s) => {
      expect(isValidSlug(s)).toBe(false);
    },
  );

  it('rejects non-strings', () => {
    expect(isValidSlug(undefined as unknown as string)).toBe(false);
    expect(isValidSlug(1 as unknown as string)).toBe(false);
  });
});
