/** An annotation as the API answers it, keys in the docs' order. */
import type { components } from '../../generated/api';
import { isoTime } from '../http/responses/format';
import type { Annotation } from './repository';

/** `omitBody`: without `body_html` (a build's list asked with `omit_body=true`). */
export function serializeAnnotation(a: Annotation, { omitBody = false } = {}): components['schemas']['Annotation'] {
  return {
    id: a.id,
    context: a.context,
    style: a.style,
    scope: a.scope,
    job_id: a.jobId,
    priority: a.priority,
    ...(omitBody ? {} : { body_html: a.bodyHtml }),
    created_at: isoTime(a.createdAt),
    updated_at: isoTime(a.updatedAt),
  };
}
