/**
 * express-openapi-validator (5.6.2) builds an `OpenAPISchemaValidator` for every validator it
 * makes, and its constructor compiles the whole OpenAPI meta-schema with Ajv whether or not
 * `validateApiSpec` asks for the document to be checked: 30-180 ms of CPU each, and the app
 * builds one validator per documented path, on that path's first request. In production that
 * blocked the event loop for tens of milliseconds on the first request to each path after a
 * start; in the test suite it was about a seventh of the contract fuzzer's CPU.
 *
 * `compileMetaSchemaOnDemand` makes the meta-schema compile when a document is first checked
 * (with `validateApiSpec: true`, at once, as before) and once per OpenAPI version and process,
 * not once per validator. The library reads the class off its module object each time it
 * builds a validator (`openapi_schema_validator_1.OpenAPISchemaValidator`), so replacing the
 * export is enough; what a check answers is the library's own validator's answer. Should an
 * upgrade move or rename the module, the require below fails and says so at start-up.
 */
import type { OpenAPISchemaValidator as LibraryValidator, OpenAPISchemaValidatorOpts } from 'express-openapi-validator/dist/framework/openapi.schema.validator';

type ValidatorModule = { OpenAPISchemaValidator: typeof LibraryValidator };
type Check = LibraryValidator['validate'];

const MODULE = 'express-openapi-validator/dist/framework/openapi.schema.validator';
const patched = new WeakSet<ValidatorModule>();

/**
 * Patches the copy of express-openapi-validator this module's `require` resolves: the app's, or,
 * where the test environment loads it (test/support/environment.ts), that realm's own copy.
 */
export function compileMetaSchemaOnDemand(): void {
  // cast: the module's declared shape (its .d.ts), checked just below before anything is replaced.
  const mod = require(MODULE) as ValidatorModule;
  if (patched.has(mod)) return;
  const Library = mod.OpenAPISchemaValidator;
  if (typeof Library !== 'function' || typeof Library.prototype.validate !== 'function') {
    throw new Error(`${MODULE} no longer exports OpenAPISchemaValidator with validate(): review src/http/contract/meta-schema.ts`);
  }
  const compiled = new Map<string, LibraryValidator>();
  class OnDemand {
    constructor(private readonly opts: OpenAPISchemaValidatorOpts) {}
    validate(doc: Parameters<Check>[0]): ReturnType<Check> {
      const key = `${this.opts.version} ${this.opts.validateApiSpec}`;
      let validator = compiled.get(key);
      if (!validator) {
        validator = new Library(this.opts);
        compiled.set(key, validator);
      }
      return validator.validate(doc);
    }
  }
  // cast: OnDemand has the class's public shape (its constructor and validate); the private field is the library's own.
  mod.OpenAPISchemaValidator = OnDemand as unknown as typeof LibraryValidator;
  patched.add(mod);
}
