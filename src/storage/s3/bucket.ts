import { createHash } from 'node:crypto';
import { S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import type { StorageSettings } from '../../config/index.ts';
import { StoreUnavailable } from '../store.ts';

export type S3Settings = Extract<StorageSettings, { kind: 's3' }>;

const CONNECT_TIMEOUT_MS = 5_000;
/** How long a request to the bucket may go without a byte either way. */
const IDLE_TIMEOUT_MS = 10_000;
/** Tries of one request: the SDK tries a timed-out one again, and a client of the file link waits for all of them. */
const MAX_ATTEMPTS = 2;

/** The bucket files live in, and the client that reaches it. */
export class Bucket {
  readonly client: S3Client;
  readonly name: string;
  private readonly prefix: string;
  private readonly endpoint: string | undefined;

  constructor(settings: S3Settings) {
    this.name = settings.bucket;
    this.prefix = settings.prefix;
    this.endpoint = settings.endpoint;
    this.client = new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      // Checksums only where S3 requires them: many S3-compatible stores (s3rver, older MinIO and
      // Ceph) keep the SDK's checksum framing as part of the object's bytes.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A bucket that accepts a request and never answers must not hold it (and one of the
      // client's sockets) for ever: the download retries, the file link answers 503.
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, socketTimeout: IDLE_TIMEOUT_MS },
      maxAttempts: MAX_ATTEMPTS,
    });
  }

  /** A short name for where files go (endpoint, bucket, prefix): the same for every process of one deployment. */
  identity(): string {
    return createHash('sha256')
      .update(JSON.stringify([this.endpoint ?? '', this.name, this.prefix]))
      .digest('hex')
      .slice(0, 12);
  }

  /** The object key of a download's file. */
  keyOf(id: string): string {
    return `${this.prefix}${id}`;
  }

  close(): void {
    this.client.destroy();
  }
}

/** The HTTP status the store answered with; undefined when it did not answer. */
export function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** Whether S3 answered that there is no such object (or upload). */
export function isMissing(error: unknown): boolean {
  return error instanceof S3ServiceException && (statusOf(error) === 404 || ['NotFound', 'NoSuchKey', 'NoSuchUpload'].includes(error.name));
}

/** What went wrong with the bucket, in a few words. */
export function reasonOf(error: unknown): string {
  if (error instanceof S3ServiceException) return `${error.name}${statusOf(error) ? ` (HTTP ${statusOf(error)})` : ''}: ${error.message}`;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return [typeof code === 'string' ? code : null, typeof message === 'string' ? message : String(error)].filter(Boolean).join(': ');
}

/** What the bucket failed to do, and why, in words that name it. */
export function bucketFailure(bucket: Bucket, action: string, error: unknown): StoreUnavailable {
  if (error instanceof StoreUnavailable) return error;
  return new StoreUnavailable(`The file store (S3 bucket ${bucket.name}) could not ${action}: ${reasonOf(error)}`);
}
