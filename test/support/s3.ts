/**
 * An S3-compatible server for tests: s3rver on 127.0.0.1, port 0, in a temp directory of its own,
 * with one bucket; started and stopped by the suite that uses it. Its client (for the tests' own
 * look into the bucket) is the SDK's, sending directly: tests are not the server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { DeleteObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { S3StoreSettings } from '../../src/artifacts/s3-storage';

export interface TestS3 {
  /** The store's settings, with the endpoint filled in once `start` has run (suites hand this object to their contexts). */
  settings: S3StoreSettings;
  /** Starts the server (again after `pause`: on a new port, which contexts made afterwards use). */
  start(): Promise<void>;
  /** Stops the server, keeping its directory (an outage). */
  pause(): Promise<void>;
  /** Stops the server if it runs and removes its directory. */
  stop(): Promise<void>;
  /** Whether the key exists in the bucket. */
  exists(key: string): Promise<boolean>;
  /** Every key under the settings' prefix (and `under`). */
  keys(under?: string): Promise<string[]>;
  remove(key: string): Promise<void>;
}

export function testS3(prefix = 'windsock/artifacts/'): TestS3 {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-s3rver-'));
  // s3rver's default account; it checks the access key, not V4 signatures.
  const settings: S3StoreSettings = {
    bucket: 'windsock-test',
    prefix,
    endpoint: 'http://127.0.0.1:1',
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
  };
  let server: S3rver | undefined;
  let client: S3Client | undefined;
  const c = () => {
    if (!client) throw new Error('the S3 server is not started');
    return client;
  };
  return {
    settings,
    async start() {
      server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: settings.bucket }] });
      readAfterWrite(server);
      const { port } = await server.run();
      settings.endpoint = `http://127.0.0.1:${port}`;
      client = new S3Client({
        endpoint: settings.endpoint,
        region: settings.region,
        forcePathStyle: true,
        credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
      });
    },
    async pause() {
      client?.destroy();
      client = undefined;
      await server?.close();
      server = undefined;
    },
    async stop() {
      await this.pause();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    async exists(key) {
      try {
        await c().send(new HeadObjectCommand({ Bucket: settings.bucket, Key: key }));
        return true;
      } catch (err) {
        if (err instanceof Error && err.name === 'NotFound') return false;
        throw err;
      }
    },
    async keys(under = '') {
      const res = await c().send(new ListObjectsV2Command({ Bucket: settings.bucket, Prefix: `${settings.prefix}${under}` }));
      return (res.Contents ?? []).map((o) => o.Key ?? '');
    },
    async remove(key) {
      await c().send(new DeleteObjectCommand({ Bucket: settings.bucket, Key: key }));
    },
  };
}

/**
 * S3 is read-after-write consistent, and the service relies on it: an agent reports an upload once
 * the store has answered it, and the service reads it back at once. s3rver is not: its filesystem
 * store ends the file's write stream and answers without waiting for it to finish, so a read right
 * after may find the object short or empty (seen under load: a report refused as "no content
 * was uploaded"). Its writes answer here once the bytes are in the file, as S3's would.
 */
function readAfterWrite(server: S3rver): void {
  const store = server.store;
  const put = store.putObject.bind(store);
  store.putObject = async (object) => {
    const written = await put(object);
    const file = store.getResourcePath(object.bucket, object.key, 'object');
    // Bounded: a write that never completes leaves the read to fail as it would have.
    const until = Date.now() + 10_000;
    while (Date.now() < until && (await fs.promises.stat(file).catch(() => null))?.size !== written.size) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    return written;
  };
}
