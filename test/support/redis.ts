/**
 * The real Redis for the suites that use it (TEST_REDIS_URL, default 127.0.0.1:6379): a key
 * prefix of the suite's own, its keys removed after; skipped with a line saying why when Redis
 * cannot be reached, and failed instead with CI=true.
 */
import crypto from 'node:crypto';
import { connectRedis, redisReady, type RedisSettings } from '../../src/db/redis';
import { TEST_REDIS_URL } from './context';

let reachable: Promise<boolean> | undefined;

async function probe(): Promise<boolean> {
  const client = connectRedis(TEST_REDIS_URL, 'windsock-test-probe');
  client.on('error', () => undefined);
  try {
    await redisReady(client);
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** `describe` when Redis answers; otherwise skipped with a warning (a failure with CI=true). */
export function describeWithRedis(name: string, body: (settings: () => RedisSettings) => void): void {
  describe(name, () => {
    let settings: RedisSettings | undefined;
    let up = false;
    beforeAll(async () => {
      up = await (reachable ??= probe());
      if (!up) {
        if (process.env.CI === 'true') throw new Error(`Redis is unreachable at ${TEST_REDIS_URL} (CI=true: the Redis suites must run)`);
        console.warn(`${name}: skipped, Redis is unreachable at ${TEST_REDIS_URL} (set TEST_REDIS_URL, or start redis-server)`);
      }
      settings = { url: TEST_REDIS_URL, prefix: `windsock-test-${crypto.randomBytes(6).toString('hex')}:` };
    });
    afterAll(async () => {
      if (up && settings) await removeKeys(settings);
    });
    body(() => {
      if (!up) return skip();
      return settings!;
    });
  });
}

/** Thrown by a test body that needs Redis when it is unreachable: the test passes having done nothing but say so. */
class RedisSkipped extends Error {}
function skip(): never {
  throw new RedisSkipped('Redis unreachable');
}

/** Runs `fn` unless Redis is unreachable (see describeWithRedis). */
export function itWithRedis(name: string, fn: () => Promise<void>, timeout?: number): void {
  it(
    name,
    async () => {
      try {
        await fn();
      } catch (err) {
        if (err instanceof RedisSkipped) return;
        throw err;
      }
    },
    timeout,
  );
}

/** Every key under the prefix (the suite's own). */
export async function removeKeys(settings: RedisSettings): Promise<void> {
  const client = connectRedis(settings.url, 'windsock-test-cleanup');
  try {
    await redisReady(client);
    const keys = await client.keys(`${settings.prefix}*`);
    if (keys.length) await client.del(...keys);
  } finally {
    client.disconnect();
  }
}
