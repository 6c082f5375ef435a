/** An organization's custom emojis: rows in, domain objects out. */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/knex';
import { ValidationError } from '../core/errors';
import { parseJson, toDate } from '../db/values';
import type { EmojisRow } from '../db/tables';

export interface Emoji {
  id: string;
  organizationId: string;
  name: string;
  url: string;
  aliases: string[];
  createdAt: Date;
}

function fromRow(r: EmojisRow): Emoji {
  return {
    id: r.id,
    organizationId: r.organization_id,
    name: r.name,
    url: r.url,
    aliases: parseJson<string[]>(r.aliases, []),
    createdAt: toDate(r.created_at),
  };
}

export class EmojiRepository {
  constructor(private readonly db: Knex) {}

  /** Every emoji of the organization, by name. */
  async list(organizationId: string): Promise<Emoji[]> {
    const rows = await this.db('emojis')
      .where({ organization_id: organizationId })
      .orderBy([{ column: 'name' }, { column: 'id' }]);
    return rows.map(fromRow);
  }

  async insert(e: Emoji): Promise<void> {
    try {
      await this.db('emojis').insert({
        id: e.id,
        organization_id: e.organizationId,
        name: e.name,
        url: e.url,
        aliases: JSON.stringify(e.aliases),
        created_at: e.createdAt,
      });
    } catch (err) {
      throw isUniqueViolation(err) ? ValidationError.field('name', `has already been taken (${e.name})`) : err;
    }
  }
}
