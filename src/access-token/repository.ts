/** Access token rows and the memberships a token reaches: rows in, domain objects out. */
import type { Knex } from 'knex';
import { SCOPES, type AccessToken, type Organization, type Principal, type Role } from '../core/identity';
import { toDate, toDateOrNull } from '../db/values';
import type { AccessTokensRow, OrganizationMembersRow, OrganizationsRow, UsersRow } from '../db/tables';
import { isUniqueViolation } from '../db/knex';
import { ValidationError } from '../core/errors';
import { orgFromRow } from '../organizations/rows';
import { ROLES, userFromRow } from '../user/rows';
import { type Nullable, type Prefixed, isOneOf, jsonColumn, oneOf } from '../db/row-types';
import { isStringArray } from '../core/guards';

/** A token as `findWhere` selects it: with its user, and each organization it reaches where the user is a member (null when none). */
type TokenPrincipalRow = AccessTokensRow &
  Prefixed<Pick<UsersRow, 'name' | 'email' | 'created_at'>, 'user_'> &
  Nullable<Prefixed<Pick<OrganizationMembersRow, 'role'>, 'member_'>> &
  Nullable<Prefixed<Pick<OrganizationsRow, 'id' | 'slug' | 'name' | 'teams_enabled' | 'created_at'>, 'org_'>>;

/** A token as `list` selects it: with its user's email and the slug of each organization it names. */
type ListedTokenRow = AccessTokensRow & Pick<Prefixed<UsersRow, 'user_'>, 'user_email'> & Nullable<Pick<Prefixed<OrganizationsRow, 'org_'>, 'org_slug'>>;

/** A stored token with its principal, and what decides whether it may still be used. */
export interface StoredToken {
  principal: Principal;
  userId: string;
  revokedAt: Date | null;
}

/** A token as `token list` shows it. */
export interface ListedToken {
  token: AccessToken;
  userEmail: string;
  organizations: string[];
  revokedAt: Date | null;
}

export class AccessTokenRepository {
  constructor(private readonly db: Knex) {}

  /** `given`: a token whose secret was given (its SHA-256 only), and whether it is the installation's admin token. */
  async insert(
    token: AccessToken,
    userId: string,
    organizationIds: string[],
    given?: { secretHash: string | null; installationAdmin: boolean },
  ): Promise<void> {
    const write = this.db.transaction(async (trx) => {
      await trx('access_tokens').insert({
        id: token.id,
        user_id: userId,
        description: token.description,
        scopes: JSON.stringify(token.scopes),
        created_at: token.createdAt,
        expires_at: token.expiresAt,
        ...(given && { secret_hash: given.secretHash, installation_admin: given.installationAdmin }),
      });
      if (organizationIds.length) {
        await trx('access_token_organizations').insert(organizationIds.map((organization_id) => ({ access_token_id: token.id, organization_id })));
      }
    });
    await write.catch((err: unknown) => {
      // The one unique key a new token can break is its given secret's hash.
      if (given?.secretHash && isUniqueViolation(err)) throw ValidationError.field('token', 'is already the secret of another token');
      throw err;
    });
  }

  /**
   * One round trip: the token, its user, and each organization the token reaches where the user
   * is (still) a member (left joins: a token may reach none).
   */
  async findWithPrincipal(tokenId: string): Promise<StoredToken | null> {
    return this.findWhere('t.id', tokenId);
  }

  /** The token whose given secret hashes to `secretHash` (never an issued JWT's row). */
  async findWithPrincipalByHash(secretHash: string): Promise<(StoredToken & { secretHash: string }) | null> {
    const found = await this.findWhere('t.secret_hash', secretHash);
    return found && { ...found, secretHash };
  }

  /** The installation admin token's id and, when its secret was given, the secret's hash. */
  async findInstallationAdmin(): Promise<{ id: string; secretHash: string | null } | null> {
    const row = await this.db('access_tokens').where({ installation_admin: true }).whereNull('revoked_at').first('id', 'secret_hash');
    return row ? { id: row.id, secretHash: row.secret_hash ?? null } : null;
  }

  private async findWhere(column: 't.id' | 't.secret_hash', value: string): Promise<StoredToken | null> {
    const rows = await this.db('access_tokens as t')
      .join('users as u', 'u.id', 't.user_id')
      .leftJoin('access_token_organizations as ato', 'ato.access_token_id', 't.id')
      .leftJoin('organization_members as m', function () {
        this.on('m.organization_id', '=', 'ato.organization_id').andOn('m.user_id', '=', 't.user_id');
      })
      .leftJoin('organizations as o', 'o.id', 'm.organization_id')
      .where(column, value)
      .select<TokenPrincipalRow[]>(
        't.*',
        'u.name as user_name',
        'u.email as user_email',
        'u.created_at as user_created_at',
        'm.role as member_role',
        'o.id as org_id',
        'o.slug as org_slug',
        'o.name as org_name',
        'o.teams_enabled as org_teams_enabled',
        'o.created_at as org_created_at',
      );
    const row = rows[0];
    if (!row) return null;
    const organizations = new Map<string, Role>();
    const organizationsBySlug = new Map<string, { organization: Organization; role: Role }>();
    for (const r of rows) {
      // A left join: a token without organizations has one row of nulls.
      if (r.org_id === null || r.org_slug === null || r.org_name === null || r.org_teams_enabled === null || r.org_created_at === null) continue;
      const organization = orgFromRow({ id: r.org_id, slug: r.org_slug, name: r.org_name, teams_enabled: r.org_teams_enabled, created_at: r.org_created_at });
      const role = oneOf(ROLES, r.member_role, 'organization_members.role');
      organizations.set(organization.id, role);
      organizationsBySlug.set(organization.slug, { organization, role });
    }
    return {
      principal: {
        token: tokenFromRow(row),
        user: userFromRow({ id: row.user_id, name: row.user_name, email: row.user_email, created_at: row.user_created_at }),
        organizations,
        organizationsBySlug,
      },
      userId: row.user_id,
      revokedAt: toDateOrNull(row.revoked_at),
    };
  }

  /**
   * Tokens (never their secrets: only the JWT has one, and it is not stored) with their user's
   * email and the slugs of the organizations each names, oldest first; filtered by user or by
   * an organization the token names. For the command line's `token list`.
   */
  async list(filter: { userId?: string; organizationId?: string }): Promise<ListedToken[]> {
    const q = this.db('access_tokens as t')
      .join('users as u', 'u.id', 't.user_id')
      .leftJoin('access_token_organizations as ato', 'ato.access_token_id', 't.id')
      .leftJoin('organizations as o', 'o.id', 'ato.organization_id')
      .orderBy([{ column: 't.created_at' }, { column: 't.id' }, { column: 'o.slug' }])
      .select<ListedTokenRow[]>('t.*', 'u.email as user_email', 'o.slug as org_slug');
    if (filter.userId) q.where('t.user_id', filter.userId);
    if (filter.organizationId) {
      q.whereIn('t.id', this.db('access_token_organizations').where({ organization_id: filter.organizationId }).select('access_token_id'));
    }
    const listed = new Map<string, ListedToken>();
    for (const row of await q) {
      const entry: ListedToken = listed.get(row.id) ?? {
        token: tokenFromRow(row),
        userEmail: row.user_email,
        organizations: [],
        revokedAt: toDateOrNull(row.revoked_at),
      };
      listed.set(row.id, entry);
      if (row.org_slug) entry.organizations.push(row.org_slug);
    }
    return [...listed.values()];
  }

  /** Whether a token that was not revoked yet is revoked now. */
  async revoke(tokenId: string, at: Date): Promise<boolean> {
    const n = await this.db('access_tokens').where({ id: tokenId }).whereNull('revoked_at').update({ revoked_at: at });
    return n > 0;
  }
}

function tokenFromRow(row: AccessTokensRow): AccessToken {
  return {
    id: row.id,
    description: row.description ?? null,
    // A scope this version does not know (none is ever written: tokens are checked on creation) grants nothing.
    scopes: jsonColumn(row.scopes, [], isStringArray, 'access_tokens.scopes').filter((s) => isOneOf(SCOPES, s)),
    createdAt: toDate(row.created_at),
    expiresAt: toDate(row.expires_at),
  };
}
