/**
 * Artifact content in an S3-compatible bucket (ARTIFACTS_STORE=s3://bucket/prefix), beside the
 * local-disk default. Objects are content-addressed as on disk:
 *
 * - `<prefix>objects/<sha256>`: content, readable only through pre-signed GET URLs that carry
 *   the content policy's headers (type, disposition, cache) as response overrides;
 * - `<prefix>uploads/<artifact id>`: where an agent's direct upload lands (a pre-signed POST
 *   form limited to the declared size); nothing reads it until Windsock has read it back, checked
 *   its size, SHA-1 and SHA-256 against what the agent declared, and copied it to its address.
 *
 * An upload through Windsock's own form (agents that ignore per-artifact instructions) is staged
 * on the local disk while hashed, and put at its address once checked. The client's HTTP goes
 * through the one transport (s3-transport.ts), to the configured endpoint's host only.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { UnavailableError } from '../core/errors';
import { fieldOf } from '../core/guards';
import { Outbound, OutboundRefused, type OutboundSettings } from '../security/outbound';
import { OutboundS3Handler } from './s3-transport';
import { hashingCounter, SHA256, stageToFile, type ArtifactStorage, type DirectUploadForm, type ServedHeaders, type StagedContent } from './storage';

/** ARTIFACTS_STORE=s3://bucket/prefix and the ARTIFACTS_S3_* settings. */
export interface S3StoreSettings {
  bucket: string;
  /** Key prefix, empty or ending in `/`. */
  prefix: string;
  /** An S3-compatible server's URL (ARTIFACTS_S3_ENDPOINT); unset: AWS S3 in `region`. */
  endpoint?: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Bucket in the path (`http://host/bucket/key`) rather than the host name (ARTIFACTS_S3_FORCE_PATH_STYLE). */
  forcePathStyle: boolean;
}

const UPLOAD_KEY = /^[0-9a-f-]{36}$/;

function isNotFound(err: unknown): boolean {
  return fieldOf(fieldOf(err, '$metadata'), 'httpStatusCode') === 404 || fieldOf(err, 'name') === 'NotFound' || fieldOf(err, 'name') === 'NoSuchKey';
}

/**
 * The store cannot be reached or failed on its side (the transport refused or lost the
 * connection, a 5xx after the SDK's retries): a 503 the agent retries, naming the store's host
 * only (never a key or a credential).
 */
function unavailable(err: unknown): unknown {
  const status = fieldOf(fieldOf(err, '$metadata'), 'httpStatusCode');
  if (err instanceof OutboundRefused || (typeof status === 'number' && status >= 500)) {
    return new UnavailableError(
      `The artifact store cannot be reached right now (${err instanceof OutboundRefused ? err.message : `status ${status}`}), please retry`,
    );
  }
  return err;
}

/**
 * AWS's URL for these settings (no endpoint set): the bucket's (`bucket`) or the region's S3 host,
 * as the SDK's own endpoint rules give it, so that every partition comes out right (China's
 * regions are under amazonaws.com.cn, `aws-global` has no region in its name).
 */
function awsUrl(settings: Pick<S3StoreSettings, 'region' | 'forcePathStyle'>, bucket?: string): URL {
  // Never sends (its endpoint rules are all that is read, then it is destroyed): so it has no transport.
  // eslint-disable-next-line no-restricted-syntax
  const rules = new S3Client({ region: settings.region });
  try {
    return rules.config.endpointProvider({
      Region: settings.region,
      ForcePathStyle: settings.forcePathStyle,
      UseFIPS: false,
      UseDualStack: false,
      Bucket: bucket,
    }).url;
  } finally {
    rules.destroy();
  }
}

/**
 * The one host (with the names under it, where a virtual-hosted bucket lives) the store's client
 * may send to: the endpoint's, or AWS's S3 host of the region. Never all of amazonaws.com, whose
 * names include any customer's EC2 instances.
 */
export function storeHostOf(settings: Pick<S3StoreSettings, 'endpoint' | 'region' | 'forcePathStyle'>): string {
  return settings.endpoint ? new URL(settings.endpoint).hostname : awsUrl({ ...settings, forcePathStyle: true }).hostname;
}

/** The S3 client of these settings, sending through `outbound` to the store's host only. */
export function s3Client(settings: S3StoreSettings, outbound: Outbound): S3Client {
  const storeHost = storeHostOf(settings);
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    // Checksums only where S3 requires one: a streamed body is then sent as it is, not re-framed
    // as aws-chunked with a trailer, which S3-compatible servers do not all read.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new OutboundS3Handler(outbound, storeHost),
  });
}

/**
 * The store of these settings. The endpoint is the operator's, not a user's: an Outbound of the
 * server's settings with private addresses allowed serves it (an in-cluster MinIO), and the
 * handler sends nowhere but the endpoint's host. Without an endpoint (AWS), the server's own
 * OUTBOUND_ALLOW_PRIVATE holds.
 */
export function createS3Storage(settings: S3StoreSettings, outboundSettings: OutboundSettings, stagingDir: string): S3ArtifactStorage {
  const outbound = new Outbound({ ...outboundSettings, allowPrivate: settings.endpoint ? true : outboundSettings.allowPrivate });
  return new S3ArtifactStorage(s3Client(settings, outbound), settings, stagingDir);
}

/** The origin of the bucket's URLs: the endpoint's (path-style) or the bucket's name under it; AWS's by its endpoint rules without an endpoint. */
export function bucketOrigin(settings: S3StoreSettings): string {
  if (!settings.endpoint) return awsUrl(settings, settings.bucket).origin;
  const base = new URL(settings.endpoint);
  return settings.forcePathStyle ? base.origin : `${base.protocol}//${settings.bucket}.${base.host}`;
}

export class S3ArtifactStorage implements ArtifactStorage {
  readonly readOrigin: string;

  constructor(
    private readonly client: S3Client,
    private readonly settings: S3StoreSettings,
    /** Where uploads through Windsock's form are staged before they are put in the bucket. */
    private readonly stagingDir: string,
  ) {
    this.readOrigin = bucketOrigin(settings);
  }

  /** One request of the client (`send` calls it); the store's outages become 503s. */
  private async send<T>(request: (client: S3Client) => Promise<T>): Promise<T> {
    try {
      return await request(this.client);
    } catch (err) {
      throw unavailable(err);
    }
  }

  private objectKey(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error('not a content address');
    return `${this.settings.prefix}objects/${sha256}`;
  }

  private uploadKey(id: string): string {
    if (!UPLOAD_KEY.test(id)) throw new Error('not an upload key');
    return `${this.settings.prefix}uploads/${id}`;
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await this.send((c) => c.send(new HeadObjectCommand({ Bucket: this.settings.bucket, Key: key })));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  private async deleteKey(key: string): Promise<void> {
    await this.send((c) => c.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: key })));
  }

  async stage(source: Readable, maxBytes: number): Promise<StagedContent> {
    const { file, size, sha1, sha256 } = await stageToFile(source, maxBytes, this.stagingDir);
    return {
      size,
      sha1,
      sha256,
      commit: async () => {
        try {
          await this.send((c) =>
            c.send(new PutObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(sha256), Body: fs.createReadStream(file), ContentLength: size })),
          );
        } finally {
          await fsp.rm(file, { force: true });
        }
      },
      discard: () => fsp.rm(file, { force: true }),
    };
  }

  localPath(): Promise<string | null> {
    return Promise.resolve(null);
  }

  async remove(sha256: string): Promise<void> {
    await this.deleteKey(this.objectKey(sha256));
  }

  signedUrl(sha256: string, headers: ServedHeaders, seconds: number): Promise<string> {
    return getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.settings.bucket,
        Key: this.objectKey(sha256),
        ResponseContentType: headers.contentType,
        ResponseContentDisposition: headers.contentDisposition,
        ResponseCacheControl: headers.cacheControl,
      }),
      { expiresIn: seconds },
    );
  }

  async directUpload(uploadKey: string, size: number, seconds: number): Promise<DirectUploadForm> {
    const { url, fields } = await createPresignedPost(this.client, {
      Bucket: this.settings.bucket,
      Key: this.uploadKey(uploadKey),
      // S3 refuses a body of any other size; Windsock checks again when the agent reports it.
      Conditions: [['content-length-range', size, size]],
      Expires: seconds,
    });
    return { url, fields };
  }

  async stageDirect(uploadKey: string, size: number, maxBytes: number): Promise<StagedContent | null> {
    const key = this.uploadKey(uploadKey);
    const Bucket = this.settings.bucket;
    let length: number;
    try {
      length = (await this.send((c) => c.send(new HeadObjectCommand({ Bucket, Key: key })))).ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
    const discard = () => this.deleteKey(key);
    const refused = () => Promise.reject(new Error('refused content cannot be committed'));
    if (length !== size || length > maxBytes) return { size: length, sha1: '', sha256: '', commit: refused, discard };
    let got;
    try {
      got = await this.send((c) => c.send(new GetObjectCommand({ Bucket, Key: key })));
    } catch (err) {
      // Moved meanwhile by a report of the same artifact, which recorded the content first.
      if (isNotFound(err)) return null;
      throw err;
    }
    const body = got.Body;
    if (!(body instanceof Readable)) throw new Error('the S3 client answered a body that is not a Node stream');
    const counter = hashingCounter(maxBytes);
    const sink = new Writable({ write: (_chunk, _enc, cb) => cb() });
    await this.send(() => pipeline(body, counter.transform, sink));
    const { size: read, sha1, sha256 } = counter.result();
    // commit copies the upload to its address and leaves it there: the caller records the
    // artifact's content, then discards the upload. A report of the same artifact sent meanwhile
    // (the agent's retry after its timeout) then finds either the upload or the recorded content,
    // never neither.
    return {
      size: read,
      sha1,
      sha256,
      commit: async () => {
        const source = `${Bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
        try {
          await this.send((c) => c.send(new CopyObjectCommand({ Bucket, Key: this.objectKey(sha256), CopySource: source })));
        } catch (err) {
          // That other report has already moved it: the same bytes are at their address.
          if (!isNotFound(err) || !(await this.exists(this.objectKey(sha256)))) throw err;
        }
      },
      discard,
    };
  }
}

/** Where `S3ArtifactStorage` stages uploads through Windsock: under the artifacts directory, as the disk store does. */
export const s3StagingDir = (artifactsDir: string) => path.join(artifactsDir, 'staging');
