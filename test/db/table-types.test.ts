/**
 * src/db/tables.ts (the row type of every table, generated from the migrations on SQLite) against
 * what each store really has after migrating: the same tables, the same columns, each of the same
 * kind and nullability. A column a migration adds without regenerating the types fails here (and
 * in `npm run generate:check`); a column type that one store renders differently fails here.
 */
import { describeEachDatabase } from '../support/context';
import { TABLE_COLUMNS } from '../../src/db/tables';
import { postgresColumnKind, sqliteColumnKind, type ColumnKind } from '../../src/db/column-kinds';

type Columns = Record<string, Record<string, [ColumnKind, boolean]>>;

describeEachDatabase('table row types', (ctx) => {
  async function storeColumns(): Promise<Columns> {
    const { db } = ctx().services;
    const out: Columns = {};
    if (ctx().kind === 'sqlite') {
      const tables: { name: string }[] = await db.raw(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'knex_%'",
      );
      for (const { name } of tables) {
        const cols: { name: string; type: string; notnull: number; pk: number }[] = await db.raw(`pragma table_info(${JSON.stringify(name)})`);
        out[name] = Object.fromEntries(
          cols.map((c) => [
            c.name,
            [sqliteColumnKind(c.type, name, c.name, c.pk > 0 && cols.filter((k) => k.pk > 0).length === 1), c.notnull === 0 && c.pk === 0],
          ]),
        );
      }
    } else {
      const schema = ctx().schema;
      if (!schema) throw new Error('a Postgres test context has its schema');
      const { rows }: { rows: { table_name: string; column_name: string; data_type: string; is_nullable: string }[] } = await db.raw(
        "select table_name, column_name, data_type, is_nullable from information_schema.columns where table_schema = ? and table_name not like 'knex_%'",
        [schema],
      );
      for (const r of rows) {
        (out[r.table_name] ??= {})[r.column_name] = [postgresColumnKind(r.data_type, r.table_name, r.column_name), r.is_nullable === 'YES'];
      }
    }
    return out;
  }

  it('has exactly the generated tables, columns, kinds and nullability', async () => {
    const store = await storeColumns();
    expect(Object.keys(store).sort()).toEqual(Object.keys(TABLE_COLUMNS).sort());
    for (const [table, columns] of Object.entries(TABLE_COLUMNS)) {
      const expected = Object.fromEntries(Object.entries(columns).map(([c, [kind, nullable]]) => [c, [kind, nullable]]));
      expect({ table, columns: store[table] }).toEqual({ table, columns: expected });
    }
  });

  it('refuses a declared type it has no kind for, naming the column', () => {
    expect(() => sqliteColumnKind('geometry', 'places', 'shape')).toThrow('places.shape');
    expect(() => postgresColumnKind('point', 'places', 'shape')).toThrow('places.shape');
  });
});
