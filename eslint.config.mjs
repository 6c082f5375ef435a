// Lint configuration: typescript-eslint's recommended rules over sources, tests and scripts;
// layout is Prettier's (`npm run format`), so eslint-config-prettier turns off the rules that
// would argue with it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import { builtinRules } from 'eslint/use-at-your-own-risk';

const sqlOnlyInRepositories = { name: 'knex', message: 'SQL belongs in a repository (src/<area>/*repository.ts) or src/db/.', allowTypeImports: true };
const otherAreasRepositories = {
  group: ['../*/*repository', '../../*/*repository'],
  message: "Another area's repository: go through its service (only src/services.ts constructs repositories).",
  allowTypeImports: true,
};
const anyRepository = {
  group: ['**/*repository', '**/repository/*'],
  message: 'Routes call services, never repositories (types may be imported).',
  allowTypeImports: true,
};

// One transport (src/security/outbound.ts, docs/outbound.md): every outgoing connection of the
// server is checked there (the address actually connected to, one deadline, no redirects), so no
// other module may open one: no `fetch`, no `http(s).request`/`get`, no raw `net`/`tls` connect,
// no undici or other HTTP client, no SDK's own HTTP client (octokit only with the transport's
// `fetch`, the OTLP exporter only with a transport of ours). Exempt, and only these:
// - src/security/outbound.ts, the transport itself;
// - src/web/assets/**, browser scripts: they run in the user's browser against Windsock's own origin;
// - src/cli/agent.ts, src/cli/buildkite-agent-shim.ts, src/cli/shim/**: the reference agent and
//   its buildkite-agent shim, a separate process that talks to the Windsock server it was given
//   (and to the upload URLs that server hands it), never on the server's behalf.
const oneTransport = {
  files: ['src/**/*.ts', 'src/**/*.js', 'src/**/*.mjs'],
  ignores: ['src/security/outbound.ts', 'src/web/assets/**', 'src/cli/agent.ts', 'src/cli/buildkite-agent-shim.ts', 'src/cli/shim/**'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: [
          ...['undici', 'node:undici', 'axios', 'got', 'node-fetch', 'superagent', 'needle', '@octokit/request', 'node:http2', 'http2'].map((name) => ({
            name,
            message: 'Outgoing HTTP goes through the one transport (src/security/outbound.ts).',
          })),
          ...['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/exporter-trace-otlp-grpc'].map((name) => ({
            name,
            message: 'The OTLP exporters open their own connections: export through a transport of ours (providers/open-telemetry.ts).',
          })),
          {
            name: '@opentelemetry/otlp-exporter-base',
            importNames: ['createOtlpHttpExportDelegate'],
            message: "The SDK's HTTP delegate opens its own connections: give createOtlpNetworkExportDelegate a transport of ours.",
          },
        ],
      },
    ],
    'no-restricted-syntax': [
      'error',
      { selector: "CallExpression[callee.name='fetch']", message: 'Outgoing HTTP goes through the one transport (src/security/outbound.ts), not fetch.' },
      {
        selector: "CallExpression[callee.type='MemberExpression'][callee.property.name='fetch'][callee.object.name=/^(globalThis|global|window)$/]",
        message: 'Outgoing HTTP goes through the one transport (src/security/outbound.ts), not fetch.',
      },
      {
        selector: "CallExpression[callee.type='MemberExpression'][callee.object.name=/^(http|https|http2)$/][callee.property.name=/^(request|get|connect)$/]",
        message: 'Outgoing HTTP goes through the one transport (src/security/outbound.ts), not http(s).request.',
      },
      {
        selector: "CallExpression[callee.type='MemberExpression'][callee.object.name=/^(net|tls)$/][callee.property.name=/^(connect|createConnection)$/]",
        message: 'Outgoing connections go through the one transport (src/security/outbound.ts).',
      },
      {
        selector: 'ImportSpecifier[imported.name=/^(request|get)$/][parent.source.value=/^(node:)?https?$/]',
        message: 'Outgoing HTTP goes through the one transport (src/security/outbound.ts), not http(s).request.',
      },
      {
        selector: "NewExpression[callee.name='Octokit']:not(:has(Property[key.name='fetch']))",
        message: "Octokit's own HTTP client is not the transport: give it `request: { fetch: fetchOver(http) }`.",
      },
    ],
  },
};

// SQL only in repositories (docs/architecture.md): outside src/db/ and the repository files, no
// query is built on a Knex handle. Lint sees no types, so a handle is known by its name, the
// names the code gives them all: `db`, `knex`, `trx`, `tx` (also as `this.db`, `s.db`...).
// Calling one (`db('builds')`) or reaching its builder (`trx.raw`, `db.schema`, `knex.fn`...) is
// refused; `.transaction(...)` (services own transactions), `.destroy()`, `.on(...)` and
// `.client` are not queries. The knex value itself is refused above (`sqlOnlyInRepositories`)
// and here in its require/import() forms. Exempt: src/db/** (the connection, migrations,
// helpers), `*repository.ts` and `repository/` folders, and http/rate-limit.ts (its shared
// counters). Its own rule name, a copy of no-restricted-syntax, so it adds to oneTransport's
// selectors instead of replacing them. test/architecture/sql-in-repositories.test.ts proves it.
const KNEX_HANDLE = '/^(db|knex|trx|tx)$/';
const QUERY_BUILDER =
  '/^(raw|schema|migrate|seed|select|from|table|into|queryBuilder|insert|upsert|update|delete|del|truncate|where|whereIn|join|count|first|with|withRecursive|union|fn|ref)$/';
const SQL_MESSAGE = 'SQL belongs in a repository (src/<area>/repository.ts, src/<area>/<name>-repository.ts) or src/db/: call one (docs/architecture.md).';
const sqlInRepositories = {
  files: ['src/**/*.ts'],
  ignores: ['src/db/**', 'src/**/*repository.ts', 'src/**/repository/**', 'src/http/middleware/rate-limit.ts'],
  plugins: { windsock: { rules: { 'sql-in-repositories': builtinRules.get('no-restricted-syntax') } } },
  rules: {
    'windsock/sql-in-repositories': [
      'error',
      { selector: `CallExpression[callee.type='Identifier'][callee.name=${KNEX_HANDLE}]`, message: SQL_MESSAGE },
      { selector: `CallExpression[callee.type='MemberExpression'][callee.property.name=${KNEX_HANDLE}]`, message: SQL_MESSAGE },
      { selector: `MemberExpression[object.type='Identifier'][object.name=${KNEX_HANDLE}][property.name=${QUERY_BUILDER}]`, message: SQL_MESSAGE },
      {
        selector: `MemberExpression[object.type='MemberExpression'][object.property.name=${KNEX_HANDLE}][property.name=${QUERY_BUILDER}]`,
        message: SQL_MESSAGE,
      },
      { selector: "CallExpression[callee.name='require'][arguments.0.value='knex']", message: SQL_MESSAGE },
      { selector: "ImportExpression[source.value='knex']", message: SQL_MESSAGE },
    ],
  },
};

/** One block of import boundaries: the modules (paths) and module patterns these files may not import as values. */
function boundaries(files, ignores, paths, patterns) {
  return { files, ignores, rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths, patterns }] } };
}

// Infrastructure connections (docs/outbound.md): the database and Redis are the operator's own
// (DATABASE_URL, REDIS_URL), not URLs a user gave, so they are not the guarded transport's
// business; but they are opened in src/db/ only (the pool in knex.ts, the change channel's
// LISTEN connection in listen.ts, Redis in redis.ts), so no other module grows a way out.
// Its own rule name (a copy of no-restricted-imports), so it adds to oneTransport's instead of replacing them.
const infrastructureConnections = {
  files: ['src/**/*.ts'],
  ignores: ['src/db/**'],
  plugins: { 'windsock-infrastructure': { rules: { 'connections-in-db': builtinRules.get('no-restricted-imports') } } },
  rules: {
    'windsock-infrastructure/connections-in-db': [
      'error',
      {
        paths: ['pg', 'pg-pool', 'ioredis', 'redis'].map((name) => ({
          name,
          message: 'Database and Redis connections are opened in src/db/ only (docs/outbound.md, "Infrastructure connections").',
        })),
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'clients/*/dist/**', 'generated/**', 'node_modules/**', 'coverage/**', 'data/**', 'test-results/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        __dirname: 'readonly',
        require: 'readonly',
        module: 'writable',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
        structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  // Boundaries (docs/architecture.md): a request flows route -> service -> repository, only
  // repositories (and src/db/) write SQL, and no area builds or calls another area's repository:
  // it asks that area's service (a type may be imported, to take one that was handed in). Only
  // src/services.ts, the composition root, constructs repositories. Later blocks win.
  boundaries(['src/**/*.ts'], ['src/services.ts'], [sqlOnlyInRepositories], [otherAreasRepositories]),
  boundaries(['src/db/**', 'src/**/*repository.ts', 'src/**/repository/**', 'src/http/middleware/rate-limit.ts'], [], [], [otherAreasRepositories]),
  boundaries(['src/**/routes.ts'], [], [sqlOnlyInRepositories], [anyRepository]),
  oneTransport,
  sqlInRepositories,
  prettier,
  infrastructureConnections,
);
