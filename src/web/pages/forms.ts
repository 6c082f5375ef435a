/**
 * Reading form fields (pages bypass the API's validator, so each field is checked here with the
 * contract's limits), and showing a refused form again: the input kept, and each error of the
 * API's `errors` array beside the field it names, instead of an error page that loses the input.
 */
import { DomainError, ValidationError } from '../../core/errors';
import { domainErrorAnswer } from '../../http/middleware/error-handler';
import { html, type Html } from '../html';
import type { ShownAgain } from '../routes';

/** A field's text, trimmed, with a textarea's CRLF line ends (browsers send them) as the `\n` the API stores. */
export function textField(body: Record<string, unknown>, name: string, opts: { max: number; required?: boolean }): string | undefined {
  const v = body[name];
  const s = typeof v === 'string' ? v.replace(/\r\n?/g, '\n').trim() : '';
  if (!s) {
    if (opts.required) throw ValidationError.field(name, "can't be blank");
    return undefined;
  }
  if (s.length > opts.max) throw ValidationError.field(name, `is too long (at most ${opts.max} characters)`);
  return s;
}

/** `KEY=value` lines -> an object (env, meta-data). */
export function keyValueLines(body: Record<string, unknown>, name: string): Record<string, string> | undefined {
  const text = textField(body, name, { max: 65536 });
  if (!text) return undefined;
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw ValidationError.field(name, `line "${line.slice(0, 40)}" is not KEY=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return out;
}

/** A query's page number, from 1. */
export function pageNumber(q: string | undefined): number {
  const n = Number(q);
  return Number.isInteger(n) && n >= 1 && n <= 10_000 ? n : 1;
}

/** A form as it is shown: the values in its fields, the errors beside them, and those that name none of its fields. */
export interface FormState {
  values: Record<string, string>;
  errors: Map<string, string[]>;
  general: string[];
  /** Shown again after a post: a checkbox absent from `values` was left unticked. */
  submitted: boolean;
}

/** A form shown for the first time. */
export function freshForm(): FormState {
  return { values: {}, errors: new Map(), general: [], submitted: false };
}

/** A ticked checkbox: browsers send its value (`on`), and leave an unticked one out. */
export function checked(body: Record<string, unknown>, name: string): boolean {
  return typeof body[name] === 'string';
}

/** The field of the form an error names: `steps[0].command` is the `steps` field's. */
function formFieldOf(field: string, fields: readonly string[]): string | undefined {
  const base = field.split(/[[.]/)[0] ?? field;
  return fields.includes(base) ? base : undefined;
}

/**
 * A refused post as its form's state, with the API's status for the error: a validation error's
 * fields beside the form's fields (the rest, and an error without fields, above the form); a
 * conflict (409: the thing changed since the form was shown) above it. Null when the error is not
 * about the input (403, 404, a server error): the error page answers those.
 */
export function refusedForm(e: unknown, body: Record<string, unknown>, fields: readonly string[]): { status: number; state: FormState } | null {
  const answer = e instanceof DomainError ? domainErrorAnswer(e) : undefined;
  if (!answer || (answer.status !== 400 && answer.status !== 409 && answer.status !== 422)) return null;
  const state: FormState = { ...freshForm(), submitted: true };
  for (const name of fields) {
    const v = body[name];
    if (typeof v === 'string') state.values[name] = v;
  }
  if (e instanceof ValidationError && e.errors.length) {
    for (const { field, code } of e.errors) {
      const at = formFieldOf(field, fields);
      if (at === undefined) state.general.push(`${field} ${code}`);
      else state.errors.set(at, [...(state.errors.get(at) ?? []), field === at ? code : `${field} ${code}`]);
    }
  } else state.general.push(answer.body.message);
  return { status: answer.status, state };
}

/**
 * Runs a form's `submit` (which answers where to go next); when the input is refused, answers the
 * form again from `render`, with what was typed and the errors in place.
 */
export async function submitOrShowAgain(
  body: Record<string, unknown>,
  fields: readonly string[],
  render: (state: FormState) => string | Promise<string>,
  submit: () => Promise<string>,
): Promise<string | ShownAgain> {
  try {
    return await submit();
  } catch (e) {
    const refused = refusedForm(e, body, fields);
    if (!refused) throw e;
    return { status: refused.status, page: await render(refused.state) };
  }
}

/** Above a refused form: that it was refused (announced), and the errors that belong to no field. */
export function formProblems(state: FormState): Html | '' {
  if (!state.errors.size && !state.general.length) return '';
  return html`<div class="notice error form-problems" role="alert">
    <p>${state.errors.size ? 'This was not saved: see the messages beside the fields.' : 'This was not saved.'}</p>
    ${
      state.general.length
        ? html`<ul>
            ${state.general.map((m) => html`<li>${m}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}

export interface FieldSpec {
  name: string;
  label: string;
  hint?: string;
  /** The value shown when the form is fresh (a submitted value wins). */
  value?: string;
  required?: boolean;
  maxlength?: number;
  /** A textarea of this many rows. */
  rows?: number;
  /** Code (YAML): no spell checking, monospaced. */
  code?: boolean;
  readonly?: boolean;
}

/** A labelled checkbox: ticked as the post had it, or as `checked` when the form is fresh; its errors beside it. */
export function checkboxField(state: FormState, f: { name: string; label: string; hint?: string; checked: boolean }): Html {
  const errors = state.errors.get(f.name) ?? [];
  const on = state.submitted ? state.values[f.name] !== undefined : f.checked;
  const described = [f.hint ? `${f.name}-hint` : '', errors.length ? `${f.name}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field checkbox${errors.length ? ' invalid' : ''}">
    <input
      type="checkbox"
      id="${f.name}"
      name="${f.name}"
      ${on ? html` checked` : ''}${described ? html` aria-describedby="${described}"` : ''}${errors.length ? html` aria-invalid="true"` : ''}
    />
    <label for="${f.name}">${f.label}</label>
    ${f.hint ? html`<p class="hint" id="${f.name}-hint">${f.hint}</p>` : ''}
    ${
      errors.length
        ? html`<ul class="field-errors" id="${f.name}-error">
            ${errors.map((m) => html`<li>${m}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}

/** A textarea drops the newline that opens its content: one is always given, so a value's own first newline survives. */
const LEADING_NEWLINE = '\n';

/** A labelled input or textarea, its hint and its errors tied to it (`aria-describedby`, `aria-invalid`). */
export function formField(state: FormState, f: FieldSpec): Html {
  const errors = state.errors.get(f.name) ?? [];
  const value = state.values[f.name] ?? f.value ?? '';
  const described = [f.hint ? `${f.name}-hint` : '', errors.length ? `${f.name}-error` : ''].filter(Boolean).join(' ');
  const attrs = html`id="${f.name}"
  name="${f.name}"${f.required ? html` required` : ''}${f.maxlength ? html` maxlength="${f.maxlength}"` : ''}${
    described ? html` aria-describedby="${described}"` : ''
  }${errors.length ? html` aria-invalid="true"` : ''}${f.readonly ? html` readonly` : ''}${f.code ? html` class="code" spellcheck="false"` : ''}`;
  return html`<div class="field${errors.length ? ' invalid' : ''}">
    <label for="${f.name}">${f.label}</label>
    ${f.hint ? html`<p class="hint" id="${f.name}-hint">${f.hint}</p>` : ''}
    ${f.rows ? html`<textarea ${attrs} rows="${f.rows}">${LEADING_NEWLINE}${value}</textarea>` : html`<input type="text" ${attrs} value="${value}" />`}
    ${
      errors.length
        ? html`<ul class="field-errors" id="${f.name}-error">
            ${errors.map((m) => html`<li>${m}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}
