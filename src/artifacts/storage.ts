/**
 * Where artifact content lives, behind one interface: content is written to a staging file while
 * it is hashed and counted, and only moved to its address (its SHA-256) once the service has
 * checked it, so a refused or interrupted upload leaves nothing a reader can see. The embedded
 * default keeps content on the local disk (`DiskArtifactStorage`, under ARTIFACTS_DIR, by
 * default `<DATA_DIR>/artifacts`); ARTIFACTS_STORE=s3://... keeps it in a bucket
 * (`S3ArtifactStorage`, s3-storage.ts), which agents upload to and readers download from through
 * pre-signed URLs. No name from a client ever becomes a file or object name: the address is the
 * hex SHA-256 of the bytes.
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
  /** Puts the content at its address. A direct upload (`stageDirect`) stays where the agent put it until `discard`. */
  commit(): Promise<void>;
  /** Drops what was staged: refused content, or a direct upload once its content is recorded. */
  discard(): Promise<void>;
}

/** The content was over the limit it was staged with; nothing of it remains. */
export class ContentTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The file is larger than ${limit} bytes`);
  }
}

/** The headers a reader of the content gets (src/artifacts/content-policy.ts decides them). */
export interface ServedHeaders {
  contentType: string;
  contentDisposition: string;
  cacheControl: string;
}

/** A form the agent posts an artifact's bytes with, straight to the store: `url` (its origin and path) and the fields before the file. */
export interface DirectUploadForm {
  url: string;
  fields: Record<string, string>;
}

export interface ArtifactStorage {
  /** Streams `source` into staging, hashing it; past `maxBytes` it rejects with ContentTooLargeError. */
  stage(source: Readable, maxBytes: number): Promise<StagedContent>;
  /** The local file holding the content (to be served with ranges), or null when there is none. */
  localPath(sha256: string): Promise<string | null>;
  /** Drops the content at this address (nothing if it is not there). */
  remove(sha256: string): Promise<void>;
  /** The origin readers fetch content from, when it is the store's (its pre-signed URLs'): the web pages let images come from it. */
  readonly readOrigin?: string;
  /**
   * Present when readers fetch content from the store itself: a pre-signed URL to the content,
   * valid for `seconds`, answered with these headers. Absent: Windsock serves the local file.
   */
  signedUrl?(sha256: string, headers: ServedHeaders, seconds: number): Promise<string>;
  /**
   * Present when agents upload straight to the store: a signed form for exactly `size` bytes
   * under the upload's own key (`uploadKey`, an artifact id), valid for `seconds`.
   */
  directUpload?(uploadKey: string, size: number, seconds: number): Promise<DirectUploadForm>;
  /**
   * What a direct upload left under `uploadKey`, read back and staged (hashed, counted) as an
   * upload through Windsock is; null when nothing was uploaded. A size other than `size` is
   * staged without reading the bytes (its hashes empty): the caller refuses it.
   */
  stageDirect?(uploadKey: string, size: number, maxBytes: number): Promise<StagedContent | null>;
}

/** A pass-through that counts and hashes what flows, failing past `maxBytes` with ContentTooLargeError. */
export function hashingCounter(maxBytes: number) {
  const sha1 = crypto.createHash('sha1');
  const sha256 = crypto.createHash('sha256');
  let size = 0;
  const transform = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > maxBytes) return cb(new ContentTooLargeError(maxBytes));
      sha1.update(chunk);
      sha256.update(chunk);
      cb(null, chunk);
    },
  });
  return { transform, result: () => ({ size, sha1: sha1.digest('hex'), sha256: sha256.digest('hex') }) };
}

/** Streams `source` into a new file under `dir`, hashing it; the file is removed if anything fails. */
export async function stageToFile(source: Readable, maxBytes: number, dir: string): Promise<{ file: string; size: number; sha1: string; sha256: string }> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${crypto.randomUUID()}.part`);
  const counter = hashingCounter(maxBytes);
  const out = fs.createWriteStream(file, { mode: 0o600 });
  try {
    await pipeline(source, counter.transform, out);
  } catch (err) {
    // A refusal on the first chunk can come before the file is even opened: the stream opens
    // it, then closes, after the failure. Removed only once it closed, no `.part` is left behind.
    if (!out.closed) await new Promise<void>((closed) => out.once('close', () => closed()));
    await fsp.rm(file, { force: true });
    // What is left of the source is read and dropped, so the request can be answered.
    source.resume();
    throw err;
  }
  return { file, ...counter.result() };
}

export const SHA256 = /^[0-9a-f]{64}$/;

export class DiskArtifactStorage implements ArtifactStorage {
  constructor(private readonly root: string) {}

  private objectPath(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error('not a content address');
    return path.join(this.root, 'objects', sha256.slice(0, 2), sha256);
  }

  async stage(source: Readable, maxBytes: number): Promise<StagedContent> {
    const { file: temp, size, sha1, sha256 } = await stageToFile(source, maxBytes, path.join(this.root, 'staging'));
    const target = this.objectPath(sha256);
    return {
      size,
      sha1,
      sha256,
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
