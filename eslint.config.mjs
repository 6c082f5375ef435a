// Lint configuration: typescript-eslint's recommended rules over sources, tests and scripts;
// layout is Prettier's (`npm run format`), so eslint-config-prettier turns off the rules that
// would argue with it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'generated/**', 'node_modules/**', 'coverage/**', 'data/**', 'test/fixtures/**'] },
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
  // Boundaries (docs/architecture.md): a request flows route -> service -> repository, and only
  // repositories (and src/db/) write SQL.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/db/**', 'src/**/*repository.ts', 'src/**/repository/**', 'src/http/rate-limit.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [{ name: 'knex', message: 'SQL belongs in a repository (src/<area>/repository.ts) or src/db/.', allowTypeImports: true }] },
      ],
    },
  },
  {
    files: ['src/**/routes.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'knex', message: 'Routes call services; SQL belongs in a repository.', allowTypeImports: true }],
          patterns: [
            {
              group: ['**/repository', '**/repository/*'],
              message: 'Routes call services, never repositories (types may be imported).',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  prettier,
);
