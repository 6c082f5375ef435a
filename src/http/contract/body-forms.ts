/**
 * Body fields that the contract types as one primitive (the form every generated client can
 * encode) while real clients also send another: before the validator, each such field of the
 * operations below becomes the contract's form, so the validator and the handler see what the
 * client meant. A value that does not convert is left as it is, for the validator to refuse.
 *
 * - `pull_request_id` of a new build: an integer; older clients send its digits as a string, or
 *   `""` for none (the field is then dropped).
 * - `priority` of an agent's registration: a string of digits, as the real agent sends it; older
 *   clients send an integer.
 * - `exit_status` of a finished job: a string, as the real agent sends it (`"0"`, `"-1"`); other
 *   clients send an integer.
 * - `access_level` of a team's suite: a list of permissions; the docs' table says "`read` or
 *   `edit`", so one permission alone becomes a list of it.
 * - `meta_data` of a new build: string values; the real API's own example sends `true`, and it
 *   keeps such a value as its text, so a boolean or a whole number becomes its string (`"true"`, `"42"`).
 * - `teams` of a pipeline's create and update: a list of team UUIDs or `{id, access_level}`; the
 *   docs' examples send an object of team UUID to access level, which becomes that list.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeTable } from './route-table';
import { isRecord } from '../../core/guards';

type Convert = (value: unknown) => { value: unknown } | 'drop' | undefined;

const PULL_REQUEST_DIGITS = /^[1-9][0-9]{0,9}$/;

/** A string of digits as the integer; `""` as no value. */
const integerFromDigits: Convert = (value) => {
  if (value === '') return 'drop';
  if (typeof value === 'string' && PULL_REQUEST_DIGITS.test(value)) return { value: Number(value) };
  return undefined;
};

/** An integer as its decimal string. */
const digitsFromInteger: Convert = (value) => (typeof value === 'number' && Number.isSafeInteger(value) ? { value: String(value) } : undefined);

/**
 * An object's boolean and whole-number values as their strings; other values are left for the
 * validator (a fraction or a number past 2^53 has no one text the client meant: `1.10` arrives as 1.1).
 */
const stringValues: Convert = (value) => {
  if (!isRecord(value)) return undefined;
  const scalar = (v: unknown) => typeof v === 'boolean' || (typeof v === 'number' && Number.isSafeInteger(v));
  if (!Object.values(value).some(scalar)) return undefined;
  return { value: Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scalar(v) ? String(v) : v])) };
};

/** `{ "<team uuid>": "<access level>", ... }` as `[{ id, access_level }, ...]`. */
const teamAssignments: Convert = (value) =>
  isRecord(value) && Object.values(value).every((v) => typeof v === 'string')
    ? { value: Object.entries(value).map(([id, access_level]) => ({ id, access_level })) }
    : undefined;

/** One string as a list of it. */
const listOfOne: Convert = (value) => (typeof value === 'string' ? { value: [value] } : undefined);

const FORMS: { method: 'post' | 'put' | 'patch'; path: string; field: string; convert: Convert }[] = [
  { method: 'post', path: '/v2/organizations/:org/pipelines/:pipeline/builds', field: 'pull_request_id', convert: integerFromDigits },
  { method: 'post', path: '/v2/organizations/:org/pipelines/:pipeline/builds', field: 'meta_data', convert: stringValues },
  { method: 'post', path: '/v2/organizations/:org/pipelines', field: 'teams', convert: teamAssignments },
  { method: 'patch', path: '/v2/organizations/:org/pipelines/:pipeline', field: 'teams', convert: teamAssignments },
  { method: 'post', path: '/v3/register', field: 'priority', convert: digitsFromInteger },
  { method: 'post', path: '/v2/organizations/:org/teams/:team/suites', field: 'access_level', convert: listOfOne },
  { method: 'patch', path: '/v2/organizations/:org/teams/:team/suites/:suite', field: 'access_level', convert: listOfOne },
  { method: 'put', path: '/v3/jobs/:job_id/finish', field: 'exit_status', convert: digitsFromInteger },
];

export function bodyForms(): RequestHandler {
  const table = routeTable();
  for (const { method, path, field, convert } of FORMS) {
    table.add(method, path, (req: Request, _res: Response, next: NextFunction) => {
      const body: unknown = req.body;
      if (isRecord(body) && field in body) {
        const fields = body;
        const converted = convert(fields[field]);
        if (converted === 'drop') delete fields[field];
        else if (converted) fields[field] = converted.value;
      }
      next();
    });
  }
  return table.handler;
}
