/**
 * Text never holds the NUL character (U+0000): Postgres `text` and `jsonb` cannot store it, so
 * it would fail deep in a query on one store and be kept on the other. It is refused at the
 * edge instead, the same way on both: in a body field a 422 naming the field, in a query
 * parameter a 400, in the path a 404 (a slug with it names nothing).
 */
import type { NextFunction, Request, Response } from 'express';
import { BadRequestError, NotFoundError, ValidationError } from '../../core/errors';
import { localsOf } from './locals';

export const NUL_CODE = 'must not contain the NUL character (U+0000)';

/** The dotted path (`steps[0].name`) of the first string or key holding NUL, or null. */
export function findNul(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (!value || typeof value !== 'object' || depth > 128) return null;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = findNul(v, `${path}[${i}]`, depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const here = path ? `${path}.${k}` : k;
    if (k.includes('\u0000')) return here;
    const found = findNul(v, here, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

function mayHoldNul(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'string') return value.includes('\u0000');
  try {
    return (JSON.stringify(value) ?? '').includes('\\u0000');
  } catch {
    return true; // not serialisable (a cycle, a BigInt): let the walk decide
  }
}

export function rejectNulCharacters() {
  return (req: Request, res: Response, next: NextFunction) => {
    if (/%00/i.test(req.path)) throw new NotFoundError('route');
    // JSON.stringify writes NUL as \u0000: one native pass clears the common case, and only
    // text that holds it is walked for the field's path.
    const inQuery = mayHoldNul(req.query) ? findNul(req.query, '') : null;
    if (inQuery !== null) throw new BadRequestError(`Invalid parameter ${inQuery}: ${NUL_CODE}`);
    // A body whose parser saw no `\u0000` in its text (an upload's) holds no NUL: not serialized again.
    const nulFree = localsOf(res).checkedBody?.nulFree === true;
    const inBody = !nulFree && mayHoldNul(req.body) ? findNul(req.body, '') : null;
    if (inBody !== null) throw ValidationError.field(inBody || 'body', NUL_CODE);
    next();
  };
}
