/** Test suites and their team grants: Knex queries, rows in and domain objects out. */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/knex';
import type { OrganizationsRow, SuitesRow } from '../db/tables';
import { toDate } from '../db/values';
import { ValidationError } from '../core/errors';
import { jsonColumn, type Renamed } from '../db/row-types';
import { isStoredPolicy, type OidcStatement } from './oidc-policy';

export interface Suite {
  id: string;
  organizationId: string;
  slug: string;
  name: string;
  defaultBranch: string | null;
  applicationName: string | null;
  color: string | null;
  emoji: string | null;
  /** Which OIDC tokens may upload instead of the API token (./oidc-policy.ts); null: none. */
  oidcPolicy: OidcStatement[] | null;
  createdAt: Date;
}

/** The columns a create or update writes. */
export type SuiteFields = Pick<Suite, 'name' | 'defaultBranch' | 'applicationName' | 'color' | 'emoji' | 'oidcPolicy'>;

function fromRow(r: SuitesRow): Suite {
  return {
    id: r.id,
    organizationId: r.organization_id,
    slug: r.slug,
    name: r.name,
    defaultBranch: r.default_branch ?? null,
    applicationName: r.application_name ?? null,
    color: r.color ?? null,
    emoji: r.emoji ?? null,
    oidcPolicy: jsonColumn(r.oidc_policy, null, isStoredPolicy, 'suites.oidc_policy'),
    createdAt: toDate(r.created_at),
  };
}

function toColumns(f: Partial<SuiteFields>): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  const set = (col: string, v: unknown) => {
    if (v !== undefined) c[col] = v;
  };
  set('name', f.name);
  set('default_branch', f.defaultBranch);
  set('application_name', f.applicationName);
  set('color', f.color);
  set('emoji', f.emoji);
  set('oidc_policy', f.oidcPolicy === undefined || f.oidcPolicy === null ? f.oidcPolicy : JSON.stringify(f.oidcPolicy));
  return c;
}

const slugTaken = (slug: string) => new ValidationError([{ field: 'name', code: `has already been taken (a suite with the slug ${slug} exists)` }]);

export class SuiteRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): SuiteRepository {
    return new SuiteRepository(trx);
  }

  async insert(
    s: { id: string; organizationId: string; slug: string; createdById: string; createdAt: Date; apiTokenHash: string; apiTokenSealed: string } & SuiteFields,
    teamIds: string[],
  ): Promise<void> {
    await this.db.transaction(async (trx) => {
      // A friendly error before the insert; the unique index still decides under races.
      if (await trx('suites').where({ organization_id: s.organizationId, slug: s.slug }).first('id')) throw slugTaken(s.slug);
      try {
        await trx('suites').insert({
          id: s.id,
          organization_id: s.organizationId,
          slug: s.slug,
          created_by_id: s.createdById,
          created_at: s.createdAt,
          api_token_hash: s.apiTokenHash,
          api_token_sealed: s.apiTokenSealed,
          ...toColumns(s),
        });
      } catch (err) {
        throw isUniqueViolation(err) ? slugTaken(s.slug) : err;
      }
      if (teamIds.length)
        await trx('suite_teams').insert(teamIds.map((teamId) => ({ suite_id: s.id, team_id: teamId, access_level: 'edit', created_at: s.createdAt })));
    });
  }

  async update(id: string, changes: Partial<SuiteFields>): Promise<void> {
    const cols = toColumns(changes);
    if (Object.keys(cols).length) await this.db('suites').where({ id }).update(cols);
  }

  /** The sealed API tokens of these suites, by id (a suite made before tokens were kept sealed has none). */
  async sealedTokens(ids: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!ids.length) return out;
    for (const r of await this.db('suites').whereIn('id', ids).whereNotNull('api_token_sealed').select('id', 'api_token_sealed'))
      if (r.api_token_sealed !== null) out.set(r.id, r.api_token_sealed);
    return out;
  }

  /** Runs, tests, executions and flaky instances go with it (foreign keys cascade). */
  async delete(id: string): Promise<void> {
    await this.db('suites').where({ id }).delete();
  }

  async findById(id: string): Promise<Suite | null> {
    const row = await this.db('suites').where({ id }).first();
    return row ? fromRow(row) : null;
  }

  async findBySlug(organizationId: string, slug: string): Promise<Suite | null> {
    const row = await this.db('suites').where({ organization_id: organizationId, slug }).first();
    return row ? fromRow(row) : null;
  }

  /** The suite an upload API token belongs to, with its organization's slug (for URLs). */
  findByTokenHash(hash: string): Promise<{ suite: Suite; orgSlug: string } | null> {
    return this.findWithOrgSlug({ 's.api_token_hash': hash });
  }

  /** A suite by its organization's slug and its own (an OIDC token's audience names them). */
  findBySlugs(orgSlug: string, slug: string): Promise<{ suite: Suite; orgSlug: string } | null> {
    return this.findWithOrgSlug({ 'o.slug': orgSlug, 's.slug': slug });
  }

  private async findWithOrgSlug(where: Record<string, string>): Promise<{ suite: Suite; orgSlug: string } | null> {
    const row = await this.db('suites as s')
      .join('organizations as o', 'o.id', 's.organization_id')
      .where(where)
      .first<(SuitesRow & Renamed<OrganizationsRow, { org_slug: 'slug' }>) | undefined>('s.*', 'o.slug as org_slug');
    return row ? { suite: fromRow(row), orgSlug: row.org_slug } : null;
  }

  private teamGrant(userId: string) {
    return this.db('suite_teams as st').join('team_members as tm', 'tm.team_id', 'st.team_id').where('tm.user_id', userId).select('st.suite_id');
  }

  /** Newest first. `visibleToUserId`: only suites granted to one of this user's teams. */
  async list(organizationId: string, visibleToUserId: string | undefined, offset: number, limit: number): Promise<{ items: Suite[]; total: number }> {
    const filtered = () => {
      const q = this.db('suites').where('organization_id', organizationId);
      if (visibleToUserId) q.whereIn('id', this.teamGrant(visibleToUserId));
      return q;
    };
    const [countRow, rows] = await Promise.all([
      filtered().count<{ n: number | string }[]>({ n: '*' }).first(),
      filtered()
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .offset(offset)
        .limit(limit),
    ]);
    return { items: rows.map(fromRow), total: Number(countRow?.n ?? 0) };
  }

  async isGrantedTo(suiteId: string, userId: string): Promise<boolean> {
    return Boolean(await this.teamGrant(userId).where('st.suite_id', suiteId).first());
  }

  /** Whether one of the user's teams may edit the suite (an `edit` grant; `read` grants only see it). */
  async isEditableBy(suiteId: string, userId: string): Promise<boolean> {
    return (await this.editableAmong([suiteId], userId)).size > 0;
  }

  /** Which of these suites one of the user's teams has `edit` on. */
  async editableAmong(suiteIds: string[], userId: string): Promise<Set<string>> {
    if (!suiteIds.length) return new Set();
    const rows: { suite_id: string }[] = await this.teamGrant(userId).whereIn('st.suite_id', suiteIds).andWhere('st.access_level', 'edit');
    return new Set(rows.map((r) => r.suite_id));
  }
}
