/**
 * Jest's node environment, plus validators shared by every test file of a worker.
 *
 * Jest gives each test file a fresh module registry (and a fresh global), so a cache kept by
 * src/http/contract/openapi-validator.ts lasts one file. This module is loaded once per worker, outside
 * the files' sandboxes: the validators it builds (with its own copy of express-openapi-validator)
 * are kept here and handed to each file's app through `windsockValidators`, which
 * test/support/share-validators.ts installs. A document and options are copied into this
 * realm before the build, so a validator keeps nothing of the file that asked for it first.
 */
import NodeEnvironment from 'jest-environment-node';
import * as OpenApiValidator from 'express-openapi-validator';
import type { ValidatorFactory, ValidatorHandlers } from '../../src/http/contract/openapi-validator';
import { compileMetaSchemaOnDemand } from '../../src/http/contract/meta-schema';

// This realm's copy of the library builds the shared validators: it compiles the meta-schema on demand too.
compileMetaSchemaOnDemand();

const validators = new Map<string, ValidatorHandlers>();

const sharedFactory: ValidatorFactory = (key, apiSpec, options) => {
  let handlers = validators.get(key);
  if (!handlers) {
    const [spec, opts] = JSON.parse(JSON.stringify([apiSpec, options])) as [object, typeof options];
    handlers = OpenApiValidator.middleware({ ...opts, apiSpec: spec as never });
    validators.set(key, handlers);
  }
  return handlers;
};

export default class WindsockEnvironment extends NodeEnvironment {
  constructor(...args: ConstructorParameters<typeof NodeEnvironment>) {
    super(...args);
    this.global.windsockValidators = sharedFactory;
  }
}
