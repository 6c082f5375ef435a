/**
 * The upload API's multipart parser: one `data` file in memory, the other parts as fields, and
 * every way a body can be malformed or over a limit turned into an answer the client can act on.
 *
 * express-openapi-validator parses multipart with its own multer and wraps what multer or busboy
 * throws in an error that keeps only the message: a truncated body ("Unexpected end of form"), a
 * broken part header or a wrong boundary became 500s, and a second `data` file a bare 413. The
 * upload API is the only operation with a multipart body, so it is parsed here, before the
 * validator (whose own parser is off), and the errors are mapped by multer's documented `code`;
 * anything else busboy raises while reading is the body's fault, so it is a 400.
 */
import type { NextFunction, Request, Response } from 'express';
import multer from 'multer';
import { BadRequestError, ValidationError } from '../core/errors';
import { isRecord } from '../core/guards';

export interface MultipartLimits {
  /** Largest `data` file, in bytes. */
  fileSize: number;
}

/** The files of a parsed upload, keyed by field (only `data` is taken). */

export const MAX_FIELDS = 100;
export const MAX_FIELD_BYTES = 64 * 1024;
export const MAX_FIELD_NAME_BYTES = 200;

export function parseUploadMultipart(limits: MultipartLimits) {
  const parse = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: limits.fileSize, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, fieldNameSize: MAX_FIELD_NAME_BYTES, parts: MAX_FIELDS + 1 },
  }).fields([{ name: 'data', maxCount: 1 }]);
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) return next();
    parse(req, res, (err: unknown) => {
      if (err) return next(multipartError(err, limits));
      // The validator checks `data` is present; the file itself stays in `req.files`.
      if (dataFile(req.files) && isRecord(req.body)) req.body.data = '';
      next();
    });
  };
}

/** The `data` file of a request parsed by `parseUploadMultipart`, if one was sent. */
export function uploadedFile(req: Request): Buffer | undefined {
  return dataFile(req.files)?.buffer;
}

/** The `data` part of multer's `req.files`: `.fields()` gives files by field name, never a list. */
function dataFile(files: Request['files']): Express.Multer.File | undefined {
  return files && !Array.isArray(files) ? files.data?.[0] : undefined;
}

function multipartError(err: unknown, limits: MultipartLimits): Error {
  if (err instanceof multer.MulterError) {
    const field = err.field ?? 'data';
    switch (err.code) {
      case 'LIMIT_UNEXPECTED_FILE':
      case 'LIMIT_FILE_COUNT':
        return field === 'data'
          ? ValidationError.field('data', 'only one file may be uploaded: send all results in one data file')
          : ValidationError.field(field, 'is a file: only data may be a file, send the other fields as text');
      case 'LIMIT_FILE_SIZE':
        return Object.assign(new Error(`data is larger than ${limits.fileSize} bytes`), { type: 'entity.too.large' });
      case 'LIMIT_FIELD_VALUE':
        return ValidationError.field(field, `is too long (maximum is ${MAX_FIELD_BYTES} bytes)`);
      case 'LIMIT_FIELD_KEY':
        return new BadRequestError(`Malformed multipart body: a field name is longer than ${MAX_FIELD_NAME_BYTES} bytes`);
      case 'LIMIT_FIELD_COUNT':
      case 'LIMIT_PART_COUNT':
        return new BadRequestError(`Malformed multipart body: more than ${MAX_FIELDS} fields`);
      case 'MISSING_FIELD_NAME':
        return new BadRequestError('Malformed multipart body: a part has no field name');
      default:
        return new BadRequestError(`Malformed multipart body: ${err.message}`);
    }
  }
  // busboy: no boundary, a truncated body or part, a malformed part header, a wrong boundary.
  const reason = err instanceof Error ? err.message : String(err);
  return new BadRequestError(`Malformed multipart body: ${reason}. Send multipart/form-data with a boundary, a data file and the fields, each part complete.`);
}
