/**
 * Where artifact content lives, behind one interface: content is written to a staging file while
 * it is hashed and counted, and only moved to its address (its SHA-256) once the service has
 * checked it, so a refused or interrupted upload leaves nothing a reader can see. The embedded
 * default keeps content on the local disk (`DiskArtifactStorage`, under ARTIFACTS_DIR, by
 * default `<DATA_DIR>/artifacts`). No name from a client ever becomes a file name: the address is
 * the hex SHA-256 of the bytes.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';

/** Content written to staging: its size and hashes; `commit` makes it readable at `sha256`, `discard` drops it. */
export interface StagedContent {
  size: number;
  sha1: string;
  sha256: string;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

/** The content was over the limit it was staged with; nothing of it remains. */
export class ContentTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The file is larger than ${limit} bytes`);
  }
}

export interface ArtifactStorage {
  /** Streams `source` into staging, hashing it; past `maxBytes` it rejects with ContentTooLargeError. */
  stage(source: Readable, maxBytes: number): Promise<StagedContent>;
  /** The local file holding the content (to be served with ranges), or null when there is none. */
  localPath(sha256: string): Promise<string | null>;
  /** Drops the content at this address (nothing if it is not there). */
  remove(sha256: string): Promise<void>;
}

const SHA256 = /^[0-9a-f]{64}$/;

export class DiskArtifactStorage implements ArtifactStorage {
  constructor(private readonly root: string) {}

  private objectPath(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error('not a content address');
    return path.join(this.root, 'objects', sha256.slice(0, 2), sha256);
  }

  async stage(source: Readable, maxBytes: number): Promise<StagedContent> {
    const staging = path.join(this.root, 'staging');
    await fsp.mkdir(staging, { recursive: true, mode: 0o700 });
    const temp = path.join(staging, `${crypto.randomUUID()}.part`);
    const sha1 = crypto.createHash('sha1');
    const sha256 = crypto.createHash('sha256');
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > maxBytes) return cb(new ContentTooLargeError(maxBytes));
        sha1.update(chunk);
        sha256.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, fs.createWriteStream(temp, { mode: 0o600 }));
    } catch (err) {
      await fsp.rm(temp, { force: true });
      // What is left of the source is read and dropped, so the request can be answered.
      source.resume();
      throw err;
    }
    const address = sha256.digest('hex');
    const target = this.objectPath(address);
    return {
      size,
      sha1: sha1.digest('hex'),
      sha256: address,
      commit: async () => {
        await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        // Same address, same bytes: a rename over an existing copy changes nothing readers see.
        await fsp.rename(temp, target);
      },
      discard: () => fsp.rm(temp, { force: true }),
    };
  }

  async localPath(sha256: string): Promise<string | null> {
    const file = this.objectPath(sha256);
    try {
      await fsp.access(file);
      return file;
    } catch {
      return null;
    }
  }

  async remove(sha256: string): Promise<void> {
    await fsp.rm(this.objectPath(sha256), { force: true });
  }
}
