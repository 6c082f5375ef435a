/** @type {import('jest').Config} */
module.exports = {
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Crash, shutdown and outage tests spawn servers: `npm run test:faults` (jest.faults.config.js).
  // The packed tarball's install and run: `npm run test:package` (jest.package.config.js).
  // The S3 artifact store's suite runs with the fault tests (it starts s3rver and stops it under a
  // report), once per CI run, not in both.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/faults/', '<rootDir>/test/package/', '<rootDir>/test/artifacts/s3.test.ts'],
  // Transpile only (tsconfig.json sets isolatedModules): `npm run typecheck` is the type gate, so tests start fast.
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Validators built once per worker, not once per test file (test/support/environment.ts).
  testEnvironment: '<rootDir>/test/support/environment.ts',
  setupFiles: ['<rootDir>/test/support/share-validators.ts'],
  testTimeout: 30000,
  // Longest files first, also on a fresh clone whose jest cache has no timings (test/support/sequencer.js).
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // One worker per core (jest's default leaves one core idle: on CI's 2 cores, everything in
  // band). The suites wait on Postgres and sockets as much as they compute, and each context
  // has its own schema or in-memory database, so two workers share nothing; the long files
  // (the contract fuzzer) no longer hold up the rest.
  maxWorkers: '100%',
};
