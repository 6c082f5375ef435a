/**
 * The rules of pipeline templates, as the real API has them: administrators create, update and
 * delete them; other members see (and may assign to pipelines) only those marked `available`.
 * A template's configuration is checked as a pipeline's is, by the parser the composition root
 * hands in (the pipelines area's: this area is below pipelines and imports nothing of it).
 * Deleting a template a pipeline uses is refused, as the docs say. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { Actor } from '../core/identity';
import type { PipelineTemplate, PipelineTemplateRepository, TemplateFields } from './repository';
import { clock } from '../core/clock';
import { isUuid } from '../core/uuid';
import type { components } from '../../generated/api';
import { changes as changedFields, type AuditEntry, type AuditLog } from '../audit/service';

/** Parses a YAML step configuration into steps, env and top-level notify, throwing a ValidationError naming what is wrong. */
export type ConfigurationParser = (yaml: string) => { steps: unknown[]; env: Record<string, string>; notify: unknown[] };

/** What a create or update of a template may set: the spec's `PipelineTemplateWritable`. */
export type TemplateInput = components['schemas']['PipelineTemplateWritable'];

/** A template id as stored (lower-case), or null when `value` is not a UUID. */
export function templateId(value: string): string | null {
  const id = value.trim().toLowerCase();
  return isUuid(id) ? id : null;
}

export class PipelineTemplateService {
  constructor(
    private readonly templates: PipelineTemplateRepository,
    private readonly parse: ConfigurationParser,
    /** Where every change is recorded, in its transaction (src/audit/service.ts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(actor: Actor, change: (templates: PipelineTemplateRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    if (!this.audit) return change(this.templates);
    return this.audit.transaction(actor, (trx) => change(this.templates.withTransaction(trx)), entry);
  }

  private requireAdmin(actor: Actor): void {
    if (actor.role !== 'admin') throw new ForbiddenError();
  }

  list(actor: Actor, offset: number, limit: number) {
    return this.templates.list(actor.organization.id, actor.role !== 'admin', offset, limit);
  }

  /** A template the caller may see, or 404 exactly as if it did not exist. */
  async get(actor: Actor, uuid: string): Promise<PipelineTemplate> {
    const id = templateId(uuid);
    const t = id ? await this.templates.find(actor.organization.id, id) : null;
    if (!t || (!t.available && actor.role !== 'admin')) throw new NotFoundError('pipeline template');
    return t;
  }

  /**
   * For the pipelines area: the template `uuid` names if the caller may assign it to a pipeline
   * (one of the actor's organization; an administrator any, another member an `available` one),
   * else null.
   */
  async assignable(actor: Actor, uuid: string): Promise<PipelineTemplate | null> {
    const id = templateId(uuid);
    const t = id ? await this.templates.find(actor.organization.id, id) : null;
    return t && (t.available || actor.role === 'admin') ? t : null;
  }

  async create(actor: Actor, input: TemplateInput): Promise<PipelineTemplate> {
    this.requireAdmin(actor);
    const errors: FieldError[] = [];
    const name = (input.name ?? '').trim();
    if (!name) errors.push({ field: 'name', code: "can't be blank" });
    const parsed = this.parsed(input.configuration ?? '', errors);
    if (errors.length || !parsed) throw new ValidationError(errors);
    const id = crypto.randomUUID();
    const fields = {
      id,
      organizationId: actor.organization.id,
      userId: actor.principal.user.id,
      at: clock.now(),
      name,
      description: emptyToNull(input.description),
      configuration: input.configuration!,
      steps: parsed.steps,
      env: parsed.env,
      notify: parsed.notify,
      available: input.available ?? false,
    };
    await this.audited(
      actor,
      (templates) => templates.insert(fields),
      () => ({
        type: 'PipelineTemplateCreatedEvent',
        subject: templateSubject(fields),
        data: { name, description: fields.description, available: fields.available, configuration: { changed: true } },
      }),
    );
    return (await this.templates.find(actor.organization.id, id))!;
  }

  async update(actor: Actor, uuid: string, input: TemplateInput): Promise<PipelineTemplate> {
    this.requireAdmin(actor);
    const current = await this.get(actor, uuid);
    const errors: FieldError[] = [];
    const changes: Partial<TemplateFields> = {};
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) errors.push({ field: 'name', code: "can't be blank" });
      else changes.name = name;
    }
    if (input.description !== undefined) changes.description = emptyToNull(input.description);
    if (input.available !== undefined) changes.available = input.available;
    if (input.configuration !== undefined) {
      const parsed = this.parsed(input.configuration, errors);
      if (parsed) Object.assign(changes, { configuration: input.configuration, steps: parsed.steps, env: parsed.env, notify: parsed.notify });
    }
    if (errors.length) throw new ValidationError(errors);
    // Nothing to change (only unknown or server-owned fields sent): no write, updated_at stays.
    if (Object.keys(changes).length === 0) return current;
    await this.audited(
      actor,
      async (templates) => {
        if (!(await templates.update(actor.organization.id, current.id, changes, actor.principal.user.id, clock.now())))
          throw new NotFoundError('pipeline template');
      },
      () => ({
        type: 'PipelineTemplateUpdatedEvent',
        subject: templateSubject({ id: current.id, name: changes.name ?? current.name }),
        data: changedFields({ ...current }, { ...changes, steps: undefined, env: undefined, notify: undefined }, ['configuration']),
      }),
    );
    return (await this.templates.find(actor.organization.id, current.id))!;
  }

  async delete(actor: Actor, uuid: string): Promise<void> {
    this.requireAdmin(actor);
    const t = await this.get(actor, uuid);
    await this.audited(
      actor,
      async (templates) => {
        if (await templates.deleteUnused(actor.organization.id, t.id)) return;
        const used = await templates.usage(t.id);
        if (used === 0) throw new NotFoundError('pipeline template');
        throw new UnprocessableError(
          `This pipeline template can't be deleted: ${used} pipeline${used === 1 ? ' uses' : 's use'} it. Assign those pipelines another template (or none) first.`,
        );
      },
      () => ({ type: 'PipelineTemplateDeletedEvent', subject: templateSubject(t), data: { name: t.name } }),
    );
  }

  private parsed(configuration: string, errors: FieldError[]) {
    if (!configuration.trim()) {
      errors.push({ field: 'configuration', code: "can't be blank" });
      return undefined;
    }
    try {
      return this.parse(configuration);
    } catch (err) {
      if (err instanceof ValidationError) {
        errors.push(...err.errors);
        return undefined;
      }
      throw err;
    }
  }
}

function emptyToNull(v: string | null | undefined): string | null {
  return v === undefined || v === null || v.trim() === '' ? null : v;
}

const templateSubject = (t: { id: string; name: string }) => ({ type: 'PipelineTemplate', id: t.id, name: t.name });
