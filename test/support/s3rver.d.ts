/** The little of s3rver (an S3-compatible server for tests, untyped) that test/support/s3.ts uses. */
declare module 's3rver' {
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory: string;
    configureBuckets?: { name: string }[];
  }
  /** What its filesystem store is given to write, and answers. */
  interface StoredObject {
    bucket: string;
    key: string;
  }
  interface FilesystemStore {
    putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
    getResourcePath(bucket: string, key: string, resource: 'object'): string;
  }
  class S3rver {
    constructor(options: S3rverOptions);
    store: FilesystemStore;
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
  export = S3rver;
}
