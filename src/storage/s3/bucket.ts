import { createHash } from 'node:crypto';
import { S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import type { StorageSettings } from '../../config/index.ts';
import { DownloadError } from '../../core/errors.ts';

export type S3Settings = Extract<StorageSettings, { kind: 's3' }>;

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

/** Whether S3 answered that there is no such object (or upload). */
export function isMissing(error: unknown): boolean {
  return error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 404 || ['NotFound', 'NoSuchKey', 'NoSuchUpload'].includes(error.name));
}

/** What went wrong with the bucket, in a few words. */
export function reasonOf(error: unknown): string {
  if (error instanceof S3ServiceException)
    return `${error.name}${error.$metadata.httpStatusCode ? ` (HTTP ${error.$metadata.httpStatusCode})` : ''}: ${error.message}`;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return [typeof code === 'string' ? code : null, typeof message === 'string' ? message : String(error)].filter(Boolean).join(': ');
}

/**
 * A download that could not reach the bucket: retried, since a store that was down comes back, and
 * failed with this message past MAX_ATTEMPTS rather than completed into nowhere.
 */
export function bucketFailure(bucket: Bucket, action: string, error: unknown): DownloadError {
  if (error instanceof DownloadError) return error;
  return new DownloadError('internal_error', `The file store (S3 bucket ${bucket.name}) could not ${action}: ${reasonOf(error)}`, true);
}
