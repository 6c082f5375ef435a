/**
 * `POST /v1/uploads`. Authentication (the suite token) and the JSON parser with the upload's
 * own body limit are mounted by app.ts ahead of the general ones, so an unauthenticated upload
 * is refused before its body is read; multipart bodies by src/uploads/multipart.ts.
 */
import express, { NextFunction, Request, Response } from 'express';
import { BadRequestError, UnauthorizedError, ValidationError } from '../core/errors';
import { isRecord } from '../core/guards';
import type { CheckedBody } from '../http/middleware/locals';
import { bodyIn, operationRouter } from '../http/contract/operation';
import { parseUploadJson } from './json';
import { uploadedFile } from './multipart';
import type { Uploader, UploadService } from './service';

/** Where app.ts mounts the upload's authentication and parsers: the spec's path of `uploadTestResults`. */
export const UPLOADS_PATH = '/v1/uploads';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own augmentation point
  namespace Express {
    interface Locals {
      /** The suite token's holder (`uploadAuth`), beside the HTTP floor's fields (src/http/middleware/locals.ts). */
      uploader?: Uploader;
    }
  }
}

/**
 * The JSON body of an upload: read as bytes, then parsed off the event loop when large
 * (src/uploads/json.ts). Errors as body-parser's: 400 `Problems parsing JSON: ...`.
 */
export function uploadJsonBody(limit: number, type: string[]) {
  const read = express.raw({ limit, type });
  const parse = async (req: Request, res: Response, next: NextFunction) => {
    if (!Buffer.isBuffer(req.body)) return next();
    if (req.body.length === 0) {
      req.body = {};
      return next();
    }
    const parsed = await parseUploadJson(req.body);
    if (!parsed.ok) throw new BadRequestError(`Problems parsing JSON: ${parsed.reason}`);
    if (!parsed.value || typeof parsed.value !== 'object') throw new BadRequestError('Problems parsing JSON: the body must be a JSON object');
    const body = parsed.value;
    const results = isRecord(body) && Array.isArray(body.data) ? body.data : undefined;
    if (results && isRecord(body)) body.data = [];
    req.body = body;
    res.locals.checkedBody = { depth: true, nulFree: !parsed.mayHoldNul, results } satisfies CheckedBody;
    next();
  };
  return [read, parse];
}

/** Resolves the suite token before the body is read. */
export function uploadAuth(service: UploadService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    res.locals.uploader = await service.authenticate(req.get('authorization'));
    next();
  };
}

export function uploadRoutes(service: UploadService) {
  const api = operationRouter();
  api.on('uploadTestResults', async (req, res) => {
    const who = res.locals.uploader;
    if (!who) throw new UnauthorizedError('no suite API token');
    const fields = bodyIn(req, 'multipart/form-data');
    if (fields) {
      // `data` may also come as a plain form field (curl -F 'data=<file').
      const data = uploadedFile(req) ?? (typeof fields.data === 'string' && fields.data !== '' ? Buffer.from(fields.data) : undefined);
      if (!data) throw ValidationError.field('data', "can't be blank: send the results as the data file");
      res.status(202).json(await service.uploadFile(who, fields, data));
      return;
    }
    const checked = res.locals.checkedBody;
    // The validator lets no other media type through (415).
    const body = bodyIn(req, 'application/json')!;
    res.status(202).json(await service.uploadJson(who, { ...body, data: checked?.results ?? body.data }, checked?.nulFree ?? false));
  });
  return api.router;
}
