/**
 * The API's types, generated from the spec (openapi/openapi.yaml) by `npm run generate` into
 * generated/api.ts with openapi-typescript: the SDK reuses that one generation rather than making
 * a second copy of the same types (`npm run generate:check` keeps it in step with the spec).
 */
export type { paths, operations, components } from '../../../generated/api';
