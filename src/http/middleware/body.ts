/**
 * What a request body may be before any handler sees it: parsed only for operations that take
 * one (others ignore whatever is sent, malformed or not), refused at once when its declared
 * length is over the limit (413 without reading it), and refused when nested deeper than any
 * client needs (JSON.parse copes with 100,000 levels, but JSON.stringify and other recursive
 * code would overflow the stack on it).
 */
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeTable } from '../contract/route-table';
import { BadRequestError } from '../../core/errors';
import { localsOf } from './locals';

/** Far deeper than any API body, collector result or provider payload, far shallower than the stack. */
export const MAX_JSON_DEPTH = 100;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
type SpecDoc = { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } } | undefined>> };

/** 413 before reading a body whose Content-Length is over `limit`; the connection is closed rather than drained. */
export function refuseDeclaredOversize(limit: number) {
  return (req: Request, res: Response, next: NextFunction) => {
    // A body already read under its own route's limit (the upload API's) is not this limit's;
    // body-parser skips such a request the same way (the stream has ended).
    if (req.readableEnded) return next();
    const declared = Number(req.get('content-length'));
    if (declared > limit) {
      res.setHeader('Connection', 'close');
      res.status(413).json({ message: 'Request body is too large' });
      return;
    }
    next();
  };
}

/** A JSON parser on each operation of the spec that takes a JSON body, and on nothing else. */
export function jsonBodyParsers(spec: SpecDoc, limit: number, type: string[]): RequestHandler {
  const table = routeTable();
  const parse = [refuseDeclaredOversize(limit), express.json({ limit, type })];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      if (!item[method]?.requestBody?.content?.['application/json']) continue;
      const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
      table.add(method, expressPath, ...parse);
    }
  }
  return table.handler;
}

/** Whether a parsed JSON value nests deeper than `max` levels. */
export function deeperThan(value: unknown, max: number): boolean {
  // Iterative: the point is not to recurse on hostile input.
  if (!value || typeof value !== 'object') return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Object.values(v)) {
      if (child && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

export function rejectDeepJson() {
  return (req: Request, res: Response, next: NextFunction) => {
    // A body whose own parser checked its depth (an upload's, src/uploads/routes.ts) is not walked again.
    const checked = localsOf(res).checkedBody?.depth === true;
    if (!checked && req.body && typeof req.body === 'object' && deeperThan(req.body, MAX_JSON_DEPTH)) {
      throw new BadRequestError(`Problems parsing JSON: nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    next();
  };
}
