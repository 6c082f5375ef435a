/** An annotation as the API answers it, keys in the docs' order. */
import type { components } from '../../generated/api';
import { isoTime } from '../http/responses/format';
import type { Annotation } from './repository';

export function serializeAnnotation(a: Annotation): components['schemas']['Annotation'] {
  return {
    id: a.id,
    context: a.context,
    style: a.style,
    scope: a.scope,
    priority: a.priority,
    body_html: a.bodyHtml,
    created_at: isoTime(a.createdAt),
    updated_at: isoTime(a.updatedAt),
  };
}
