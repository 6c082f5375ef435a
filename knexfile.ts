// Settings for the knex CLI; the service itself builds its instance in src/db/knex.ts from the same config.
import { loadConfig } from './src/config';
import { migrationSource } from './src/db/migrations';

const config = loadConfig();

module.exports = {
  client: config.databaseKind === 'sqlite' ? 'better-sqlite3' : 'pg',
  connection: config.databaseKind === 'sqlite' ? { filename: config.databaseUrl } : config.databaseUrl,
  useNullAsDefault: true,
  migrations: { migrationSource },
};
