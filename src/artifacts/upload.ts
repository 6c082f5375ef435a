/**
 * The upload form's multipart parser (`POST /artifact-uploads`), mounted by app.ts before the
 * general body parsers and the validator: the file part is streamed straight into the storage's
 * staging area (hashed and counted on the way, over the per-file limit refused with a 413 and
 * its bytes dropped), never held in memory. The service decides afterwards whether the staged
 * content is kept (src/artifacts/service.ts `upload`).
 */
import type { NextFunction, Request, Response } from 'express';
import multer from 'multer';
import { BadRequestError, ValidationError } from '../core/errors';
import { fieldOf, isRecord } from '../core/guards';
import type { ArtifactService } from './service';
import type { StagedContent } from './storage';

/** Where app.ts mounts the parser: the spec's path of `uploadArtifactContent`. */
export const ARTIFACT_UPLOADS_PATH = '/artifact-uploads';

const MAX_FIELDS = 20;
const MAX_FIELD_BYTES = 4096;

type StagedFile = Express.Multer.File & { staged?: StagedContent };

export function parseArtifactUpload(service: ArtifactService) {
  const storage: multer.StorageEngine = {
    _handleFile(_req, file, cb) {
      service.stage(file.stream).then(
        (staged) => {
          const info: Partial<StagedFile> = { staged, size: staged.size };
          cb(null, info);
        },
        (err: Error) => cb(err),
      );
    },
    _removeFile(_req, file, cb) {
      const staged = stagedOf(file);
      (staged ? staged.discard() : Promise.resolve()).then(
        () => cb(null),
        (err: Error) => cb(err),
      );
    },
  };
  const parse = multer({ storage, limits: { files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS + 1 } }).single('file');
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) return next();
    parse(req, res, (err: unknown) => {
      if (err) return next(multipartError(err));
      // The validator checks `file` is present; the staged content stays on `req.file`.
      if (req.file && isRecord(req.body)) req.body.file = '';
      next();
    });
  };
}

/** The content staged from the request's `file` part, if one was sent. */
export function stagedFile(req: Request): StagedContent | undefined {
  return stagedOf(req.file);
}

/** What `_handleFile` staged, which multer copies onto the file it hands on (its type does not know the field). */
function stagedOf(file: Express.Multer.File | undefined): StagedContent | undefined {
  const staged = fieldOf(file, 'staged');
  return isStagedContent(staged) ? staged : undefined;
}

function isStagedContent(v: unknown): v is StagedContent {
  return (
    typeof fieldOf(v, 'size') === 'number' &&
    typeof fieldOf(v, 'sha1') === 'string' &&
    typeof fieldOf(v, 'sha256') === 'string' &&
    typeof fieldOf(v, 'commit') === 'function' &&
    typeof fieldOf(v, 'discard') === 'function'
  );
}

function multipartError(err: unknown): unknown {
  if (err instanceof multer.MulterError) {
    switch (err.code) {
      case 'LIMIT_UNEXPECTED_FILE':
      case 'LIMIT_FILE_COUNT':
        return ValidationError.field(err.field ?? 'file', 'is a file: only `file` may be one, and only once');
      case 'LIMIT_FIELD_VALUE':
        return ValidationError.field(err.field ?? 'body', `is too long (maximum is ${MAX_FIELD_BYTES} bytes)`);
      default:
        return new BadRequestError(`Malformed multipart body: ${err.message}`);
    }
  }
  // A domain error of the service (the file over the limit) goes as it is.
  if (err instanceof Error && err.constructor.name !== 'Error') return err;
  return new BadRequestError(`Malformed multipart body: ${err instanceof Error ? err.message : String(err)}`);
}
