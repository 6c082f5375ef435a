/** Helpers of the tests that read pipeline configurations (src/pipelines/configuration). */
import { ValidationError, type FieldError } from '../../src/core/errors';
import { parseConfiguration } from '../../src/pipelines/configuration';

/** A YAML configuration from its lines. */
export const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;

/** The FieldErrors `run` throws; fails the test if it returns or throws anything else. */
export function errorsOf(run: () => unknown): FieldError[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).errors;
  }
  throw new Error('expected a ValidationError, got a result');
}

/** The codes of a configuration that is expected to be rejected (each on the `configuration` field). */
export function codesOf(text: string): string[] {
  const errors = errorsOf(() => parseConfiguration(text));
  for (const e of errors) expect(e.field).toBe('configuration');
  return errors.map((e) => e.code);
}
