/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Transpile only: `npm run typecheck` is the type gate, so tests start fast.
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testTimeout: 30000,
};
