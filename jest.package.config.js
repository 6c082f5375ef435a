/**
 * `npm run test:package`: the packed tarball installed into an empty directory and run with npx
 * (test/package/). Apart from `npm test`: it packs the compiled tree (built first, as for the
 * fault tests) and installs the package's dependencies from npm's cache.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/package/**/*.test.ts'],
  testPathIgnorePatterns: [],
  globalSetup: '<rootDir>/test/faults/global-setup.ts',
  maxWorkers: 1,
  testTimeout: 300000,
};
