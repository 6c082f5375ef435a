/**
 * Runs before each test file (jest's setupFiles): the app's validators come from the worker's
 * shared factory (test/support/environment.ts), so a path's validator is built once per worker
 * instead of once per test context.
 */
import { shareValidators, type ValidatorFactory } from '../../src/http/contract/openapi-validator';

const shared = (globalThis as { windsockValidators?: ValidatorFactory }).windsockValidators;
if (shared) shareValidators(shared);
