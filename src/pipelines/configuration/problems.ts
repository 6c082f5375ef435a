/**
 * Error reporting. The readers say what is wrong with which property; a ProblemReporter turns
 * that into a FieldError in the dialect of the input, and the ProblemList collects them all.
 */
import { ValidationError, type FieldError } from '../../core/errors';
import { MAX_ERRORS } from './limits';
import { TooLargeError, type SourceLine, type ConfigValue } from './value-tree';

export class ProblemList {
  private readonly list: { error: FieldError; line: number }[] = [];
  /** Attributes accepted but not acted on, one line each (see step-attributes.ts). */
  readonly notices: string[] = [];
  notice(message: string): void {
    if (this.notices.length < MAX_ERRORS && !this.notices.includes(message)) this.notices.push(message);
  }
  /** `line` orders YAML errors as they appear in the document, not as the rules ran. */
  add(field: string, code: string, line = 0): void {
    if (this.list.length < MAX_ERRORS) this.list.push({ error: { field, code }, line });
  }
  get full(): boolean {
    return this.list.length >= MAX_ERRORS;
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    throw new ValidationError(this.list.sort((a, b) => a.line - b.line).map((p) => p.error));
  }
}

export type Dialect = 'yaml' | 'visual';

export interface ProblemReporter {
  readonly dialect: Dialect;
  /** A property is at fault; `at` locates it in YAML (the step itself when omitted). */
  fail(path: string, message: string, at?: ConfigValue): void;
  /** The step as a whole is at fault. */
  failStep(message: string): void;
  /** A property is accepted but not acted on. */
  notice(path: string, message: string): void;
}

export class YamlProblemReporter implements ProblemReporter {
  readonly dialect = 'yaml';
  constructor(
    private readonly problems: ProblemList,
    /** "2", or "3.1" for the first step of the group at step 3; null for top-level keys. */
    private readonly label: string | null,
    private readonly line: SourceLine,
  ) {}
  fail(path: string, message: string, at?: ConfigValue): void {
    const line = at?.line ?? this.line ?? 1;
    const where = this.label === null ? `line ${line}` : `step ${this.label} (line ${line})`;
    this.problems.add('configuration', `${where}: "${path}" ${message}`, line);
  }
  failStep(message: string): void {
    const line = this.line ?? 1;
    this.problems.add('configuration', `step ${this.label ?? '?'} (line ${line}) ${message}`, line);
  }
  notice(path: string, message: string): void {
    const where = this.label === null ? 'top level' : `step ${this.label}`;
    this.problems.notice(`${where}: "${path}" is accepted but not acted on: ${message}`);
  }
}

export class VisualProblemReporter implements ProblemReporter {
  readonly dialect = 'visual';
  constructor(
    private readonly problems: ProblemList,
    private readonly index: number,
  ) {}
  fail(path: string, message: string): void {
    this.problems.add(`steps[${this.index}].${path}`, message);
  }
  failStep(message: string): void {
    this.problems.add(`steps[${this.index}]`, message);
  }
  notice(path: string, message: string): void {
    this.problems.notice(`steps[${this.index}].${path} is accepted but not acted on: ${message}`);
  }
}

export const tooLong = (max: number) => `is too long (maximum is ${max} characters)`;
export const tooMany = (max: number) => `must have at most ${max} items`;
export const mapping = (reporter: ProblemReporter) => (reporter.dialect === 'yaml' ? 'a mapping' : 'an object');

/** Echoes a user-supplied name in an error without letting it flood or break the message. */
export function quote(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

/** Sets `key` as an own property even when it is `__proto__` (a valid variable name). */
export function define<V>(target: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The contract is "a ValidationError or a result": anything else escaping would be a 500 on
 * input the client controls, e.g. a stack overflow on something nested deeper than expected. */
export function asValidationError(error: unknown, field: string, tooLarge: string): ValidationError {
  if (error instanceof ValidationError) return error;
  if (error instanceof TooLargeError) return ValidationError.field(field, tooLarge);
  return ValidationError.field(field, 'could not be read: it may be too large or nested too deeply');
}
