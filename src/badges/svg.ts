/**
 * The badge image: a label ("build") and the status on coloured backgrounds, in the flat style
 * (rounded, with a light gradient) or `square` (also called `flat-square`, as shields.io's), in a
 * theme: a name from buildkite/build-status-badge-themes or the custom form
 * `passing-bg,failing-bg,unknown-bg[,label-bg[,text[,status-text]]]` (hex colours without `#`).
 * Every text placed in the SVG is escaped; colours are accepted only as hex.
 */
import type { BadgeStatus } from './service';

export type BadgeStyle = 'flat' | 'square';

interface Theme {
  passing: string;
  failing: string;
  unknown: string;
  label: string;
  text: string;
  statusText: string;
}

/** buildkite/build-status-badge-themes themes.json: passing, failing, unknown[, label[, text[, status text]]]. */
const THEMES: Record<string, string> = {
  default: '4c1,f00,aaa,555',
  slack: '77992e,d7100c,82d3e0,5c3957,fff',
  github: '77F177,faa,aaa',
  saturn: '7450b6,ffb899,74cab4,201632',
  mono: '555,555,555,aaa,fff',
};

const HEX = /^(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

/** The theme named or spelled out; anything else (an unknown name, a colour that is not hex) is the default. */
export function parseTheme(value: string | undefined): Theme {
  const fallback = THEMES.default!.split(',');
  const spec = value === undefined ? undefined : (THEMES[value] ?? value);
  let colours = spec?.split(',') ?? fallback;
  if (colours.length < 3 || colours.length > 6 || !colours.every((c) => HEX.test(c))) colours = fallback;
  const [passing, failing, unknown, label = '555', text = 'fff', statusText = text] = colours;
  return { passing: passing!, failing: failing!, unknown: unknown!, label, text, statusText };
}

export function parseStyle(value: string | undefined): BadgeStyle {
  return value === 'square' || value === 'flat-square' ? 'square' : 'flat';
}

export const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** Verdana 11px is about 6.5 px a character for these lower-case words; 10 px of padding each side. */
const widthOf = (text: string) => Math.round(text.length * 6.5) + 10;

export function renderBadge(status: BadgeStatus, opts: { style?: BadgeStyle; theme?: Theme; label?: string } = {}): string {
  const theme = opts.theme ?? parseTheme(undefined);
  const style = opts.style ?? 'flat';
  const label = escapeXml(opts.label ?? 'build');
  const value = escapeXml(status);
  const lw = widthOf(opts.label ?? 'build');
  const vw = widthOf(status);
  const w = lw + vw;
  const radius = style === 'flat' ? 3 : 0;
  const gradient =
    style === 'flat'
      ? '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
      : '';
  const shade = style === 'flat' ? `<rect width="${w}" height="20" fill="url(#s)"/>` : '';
  const shadow = (x: number, text: string) => (style === 'flat' ? `<text x="${x}" y="15" fill="#010101" fill-opacity=".3">${text}</text>` : '');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${label}: ${value}">`,
    `<title>${label}: ${value}</title>`,
    gradient,
    `<clipPath id="r"><rect width="${w}" height="20" rx="${radius}" fill="#fff"/></clipPath>`,
    '<g clip-path="url(#r)">',
    `<rect width="${lw}" height="20" fill="#${theme.label}"/>`,
    `<rect x="${lw}" width="${vw}" height="20" fill="#${theme[status]}"/>`,
    shade,
    '</g>',
    '<g text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">',
    shadow(lw / 2, label),
    `<text x="${lw / 2}" y="14" fill="#${theme.text}">${label}</text>`,
    shadow(lw + vw / 2, value),
    `<text x="${lw + vw / 2}" y="14" fill="#${theme.statusText}">${value}</text>`,
    '</g>',
    '</svg>',
  ].join('');
}
