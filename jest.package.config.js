/**
 * `npm run test:package`: the packed tarball installed into an empty directory and run with npx
 * (test/package/). Apart from `npm test`: `npm pack` builds the tree, and the install takes the
 * package's dependencies from npm's cache.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/package/**/*.test.ts'],
  testPathIgnorePatterns: [],
  maxWorkers: 1,
  testTimeout: 300000,
};
