/**
 * `POST /v1/uploads`. Authentication (the suite token) and the JSON parser with the upload's
 * own body limit are mounted by app.ts ahead of the general ones, so an unauthenticated upload
 * is refused before its body is read; multipart bodies by src/uploads/multipart.ts.
 */
import express, { NextFunction, Request, Response } from 'express';
import type { components } from '../../generated/api';
import { ValidationError } from '../http/errors';
import { uploadedFile } from './multipart';
import type { Uploader, UploadService } from './service';

export const UPLOADS_PATH = '/v1/uploads';

/** Resolves the suite token before the body is read. */
export function uploadAuth(service: UploadService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    res.locals.uploader = await service.authenticate(req.get('authorization'));
    next();
  };
}

export function uploadRoutes(service: UploadService) {
  const router = express.Router();
  router.post(UPLOADS_PATH, async (req, res) => {
    const who = res.locals.uploader as Uploader;
    if (req.is('multipart/form-data')) {
      const fields = req.body as components['schemas']['UploadMultipartRequest'];
      // `data` may also come as a plain form field (curl -F 'data=<file').
      const data = uploadedFile(req) ?? (typeof fields.data === 'string' && fields.data !== '' ? Buffer.from(fields.data) : undefined);
      if (!data) throw ValidationError.field('data', "can't be blank: send the results as the data file");
      res.status(202).json(await service.uploadFile(who, fields, data));
      return;
    }
    res.status(202).json(await service.uploadJson(who, req.body as components['schemas']['UploadRequest']));
  });
  return router;
}
