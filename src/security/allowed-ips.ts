/**
 * A cluster agent token's and an organization's API `allowed_ip_addresses`: space-separated CIDR ranges (the documented
 * form, e.g. `202.144.0.0/24 10.0.0.0/8`), parsed and matched with ipaddr.js. An IPv4 address
 * that arrives as IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how Node reports IPv4 callers on a
 * dual-stack socket) is matched as the IPv4 address it is. Pure.
 */
import ipaddr from 'ipaddr.js';

/**
 * The ranges of a value, or the entries that are neither CIDR ranges nor addresses. An address
 * alone is its own range (`/32`, `/128`), as the docs' examples write one (`198.51.100.12`).
 */
export function parseAllowedIps(value: string): { ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][]; invalid: string[] } {
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  const invalid: string[] = [];
  for (const entry of value.split(/[\s,]+/).filter(Boolean)) {
    if (!entry.includes('/') && (ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry))) {
      const ip = ipaddr.parse(entry);
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      continue;
    }
    try {
      ranges.push(ipaddr.parseCIDR(entry));
    } catch {
      invalid.push(entry);
    }
  }
  return { ranges, invalid };
}

/** Whether the ranges allow every address: they have `0.0.0.0/0`, the docs' "no restriction" default (IPv6 callers too). */
export function allowsAny(ranges: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][]): boolean {
  return ranges.some(([range, bits]) => range.kind() === 'ipv4' && bits === 0);
}

/** The ranges written as stored: one space between them, no surrounding blanks. */
export function normalizeAllowedIps(value: string): string {
  return value
    .split(/[\s,]+/)
    .filter(Boolean)
    .join(' ');
}

/** Whether `address` is in one of the ranges; an address that can't be parsed is in none. */
export function ipAllowed(allowed: string, address: string | null | undefined): boolean {
  const { ranges } = parseAllowedIps(allowed);
  if (allowsAny(ranges)) return true;
  if (!address || !ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress()) ip = ip.toIPv4Address();
  return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
}
