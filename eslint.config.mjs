// Lint configuration: typescript-eslint's recommended rules over sources, tests and scripts;
// layout is Prettier's (`npm run format`), so eslint-config-prettier turns off the rules that
// would argue with it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

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

/** One block of import boundaries: the modules (paths) and module patterns these files may not import as values. */
function boundaries(files, ignores, paths, patterns) {
  return { files, ignores, rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths, patterns }] } };
}

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
  boundaries(['src/db/**', 'src/**/*repository.ts', 'src/**/repository/**', 'src/http/rate-limit.ts'], [], [], [otherAreasRepositories]),
  boundaries(['src/**/routes.ts'], [], [sqlOnlyInRepositories], [anyRepository]),
  prettier,
);
