/**
 * The settings of a service a test starts in-process (`startServer`, `serve`): loopback on a free
 * port, the test's own data directory and a random secret, no log lines. `env` adds settings or
 * overrides these.
 */
import crypto from 'node:crypto';
import { loadConfig, type Config } from '../../src/config';

export function loopbackConfig(dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, JWT_SECRET: crypto.randomBytes(32).toString('hex'), LOG_LEVEL: 'silent', ...env });
}
