/**
 * The cursors of lists read by keyset, ordered by a time and an id (`links.next`'s `after`, a
 * `before`): the row's time in milliseconds and its UUID, as base64url JSON. Opaque to clients;
 * one this encoding did not make is a 400.
 */
import { BadRequestError } from './errors';
import { isUuid } from './uuid';

/** A position in such a list: the time and the id of the row a page ended (or began) with. */
export interface TimeCursor {
  at: Date;
  id: string;
}

export function encodeTimeCursor(at: Date, id: string): string {
  return Buffer.from(JSON.stringify([at.getTime(), id])).toString('base64url');
}

/** The cursor a query parameter (`name`) carries; a 400 naming it when it is not one. */
export function decodeTimeCursor(cursor: string, name: string): TimeCursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const [at, id]: unknown[] = Array.isArray(v) && v.length === 2 ? v : [];
    if (typeof at === 'number' && Number.isSafeInteger(at) && typeof id === 'string' && isUuid(id)) return { at: new Date(at), id: id.toLowerCase() };
  } catch {
    // falls through to the error below
  }
  throw new BadRequestError(`Invalid parameter ${name}: not a cursor of this list (take it from links.next)`);
}

/** A 400 when a request sends both `after` and `before` (every list read by cursor). */
export function oneCursorAtMost(opts: { after?: string; before?: string }): void {
  if (opts.after !== undefined && opts.before !== undefined) throw new BadRequestError('Invalid parameters: after and before cannot be used together');
}

/** `after` and `before` of a request, decoded; both at once is a 400. */
export function timeCursors(opts: { after?: string; before?: string }): { after?: TimeCursor; before?: TimeCursor } {
  oneCursorAtMost(opts);
  return {
    after: opts.after !== undefined ? decodeTimeCursor(opts.after, 'after') : undefined,
    before: opts.before !== undefined ? decodeTimeCursor(opts.before, 'before') : undefined,
  };
}
