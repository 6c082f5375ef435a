/**
 * The `Warning` response header (RFC 7234 section 5.5, code 299 "miscellaneous persistent
 * warning"): how an answer says that part of what it accepted is not acted on, without
 * changing a body real clients parse. Kubernetes reports deprecated fields the same way.
 */
import type { Response } from 'express';

export function setWarnings(res: Response, notices: readonly string[]): void {
  if (notices.length === 0) return;
  // A quoted-string: backslash and quote escaped, and nothing outside printable ASCII.
  const quoted = (s: string) => `"${s.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`)}"`;
  res.set('Warning', notices.map((n) => `299 windsock ${quoted(n)}`).join(', '));
}
