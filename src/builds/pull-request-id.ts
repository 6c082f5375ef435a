/**
 * `pull_request_id` of a new build: the contract says an integer (the form the real API's clients
 * send, and the one type every generated client can encode), while older clients send the number
 * as a string of its digits, or `""` for none. Before the validator, those strings become what
 * they mean: the integer, or no pull request. Any other string is left for the validator to refuse.
 */
import type { NextFunction, Request, Response } from 'express';

const DIGITS = /^[1-9][0-9]{0,9}$/;

export function acceptPullRequestIdStrings(req: Request, _res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    const value = fields.pull_request_id;
    if (value === '') delete fields.pull_request_id;
    else if (typeof value === 'string' && DIGITS.test(value)) fields.pull_request_id = Number(value);
  }
  next();
}
