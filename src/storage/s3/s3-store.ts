import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable, Writable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { LRUCache } from 'lru-cache';
import { StoredFileGone, type FileStore, type PresignRequest, type StoredFile } from '../store.ts';
import { bucketFailure, isMissing, reasonOf, statusOf, type Bucket } from './bucket.ts';
import type { CompletedTransfers } from './completed-transfers.ts';

// Finished files as objects of a bucket, and only there: a worker uploads a file from its working
// folder and lets go of the local copy. Readers go through the bucket (a ranged GET per request), or
// are sent to it with a presigned GET. An object never changes once stored, so the file link asks
// for its size (HEAD) at most once a second per file: a load of small ranges costs one GET each,
// and an object removed by another process stops being served within a second, as with local
// files. A look at a download (its GET, polled) takes the object's presence on trust for
// PRESENCE_KEPT_MS, kept apart: the file link never serves on the strength of it.

// The bytes in memory per upload are PART_BYTES times QUEUE_SIZE.
const PART_BYTES = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;
const READY_TIMEOUT_MS = 2_000;
const SIZE_KEPT_MS = 1_000;
const PRESENCE_KEPT_MS = 5_000;
/** Files each memory below holds at most: the least recently used go first. */
const FILES_KEPT = 1_000;

export class S3Store implements FileStore {
  readonly kind = 's3';
  readonly redirects: boolean;
  private readonly sizes = new LRUCache<string, number>({ max: FILES_KEPT, ttl: SIZE_KEPT_MS });
  /** Objects a look at their download found; looks at one file at once share one HEAD. */
  private readonly present = new LRUCache<string, true>({
    max: FILES_KEPT,
    ttl: PRESENCE_KEPT_MS,
    // An object not there is not remembered (undefined): the look that finds so expires its download.
    fetchMethod: async (id) => ((await this.head(id)) === null ? undefined : true),
  });

  /** `presignSeconds`: the longest a presigned GET lives, when readers are sent to the bucket; null when the service streams the bytes. */
  constructor(
    private readonly bucket: Bucket,
    private readonly completed: CompletedTransfers,
    private readonly presignSeconds: number | null,
  ) {
    this.redirects = presignSeconds !== null;
  }

  async put(id: string, file: string, contentType: string, signal: AbortSignal): Promise<void> {
    if (!(await this.completed.isStored(id, file))) {
      const upload = new Upload({
        client: this.bucket.client,
        params: { Bucket: this.bucket.name, Key: this.bucket.keyOf(id), Body: createReadStream(file), ContentType: contentType },
        partSize: PART_BYTES,
        queueSize: QUEUE_SIZE,
      });
      // A cancel or a shutdown stops the upload rather than waiting for its last part.
      const stop = () => void upload.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        signal.throwIfAborted();
        await upload.done();
      } catch (error) {
        throw signal.aborted ? signal.reason : bucketFailure(this.bucket, 'take the finished file', error);
      } finally {
        signal.removeEventListener('abort', stop);
      }
    }
    // The object is replaced: what was known of the one before goes.
    this.forget(id);
    await rm(file, { force: true });
  }

  async read<T>(id: string, use: (file: StoredFile) => Promise<T>): Promise<T | null> {
    const size = await this.sizeOf(id);
    if (size === null) return null;
    return use({ size, sendTo: (out, start, end) => this.sendRange(id, out, start, end) });
  }

  async has(id: string): Promise<boolean> {
    return (await this.sizeOf(id)) !== null;
  }

  /** Rejects when the bucket cannot answer, or when the file is removed during the look. */
  async hasLately(id: string): Promise<boolean> {
    return (await this.present.fetch(id)) === true;
  }

  /** A HEAD per file, which a list of many would pay for every time: left to `has`. */
  missingAmong(): Promise<null> {
    return Promise.resolve(null);
  }

  async remove(id: string): Promise<void> {
    this.forget(id);
    await this.bucket.client.send(new DeleteObjectCommand({ Bucket: this.bucket.name, Key: this.bucket.keyOf(id) })).catch((error: unknown) => {
      if (!isMissing(error)) throw bucketFailure(this.bucket, 'remove a file', error);
    });
  }

  async presign(id: string, request: PresignRequest): Promise<string | null> {
    if (this.presignSeconds === null) return null;
    // The link dies with the token, or sooner: a presigned URL cannot be taken back.
    const expiresAt = Math.min(request.expiresAt.getTime(), Date.now() + this.presignSeconds * 1000);
    const seconds = Math.floor((expiresAt - Date.now()) / 1000);
    const command = new GetObjectCommand({
      Bucket: this.bucket.name,
      Key: this.bucket.keyOf(id),
      ResponseContentDisposition: request.contentDisposition,
      ResponseContentType: request.contentType,
    });
    return getSignedUrl(this.bucket.client, command, { expiresIn: Math.max(1, seconds) });
  }

  async problem(): Promise<string | null> {
    try {
      await this.bucket.client.send(new HeadBucketCommand({ Bucket: this.bucket.name }), { abortSignal: AbortSignal.timeout(READY_TIMEOUT_MS) });
      return null;
    } catch (error) {
      // A HEAD answer has no body, so S3 cannot say more than its status.
      const status = statusOf(error);
      const reason = status === 404 ? 'it does not exist (HTTP 404)' : status === 403 ? 'access is denied (HTTP 403)' : reasonOf(error);
      return `the S3 bucket ${this.bucket.name} cannot be used: ${reason}`;
    }
  }

  close(): void {
    this.bucket.close();
  }

  /** The size of the file, as the file link knows it: from its own HEAD, up to a second old. */
  private async sizeOf(id: string): Promise<number | null> {
    const known = this.sizes.get(id);
    if (known !== undefined) return known;
    const size = await this.head(id);
    if (size === null) this.forget(id);
    else this.sizes.set(id, size);
    return size;
  }

  /** The size of the object as the bucket says it now; null when there is none. */
  private async head(id: string): Promise<number | null> {
    try {
      const head = await this.bucket.client.send(new HeadObjectCommand({ Bucket: this.bucket.name, Key: this.bucket.keyOf(id) }));
      return head.ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return null;
      throw bucketFailure(this.bucket, 'find a file', error);
    }
  }

  private forget(id: string): void {
    this.sizes.delete(id);
    this.present.delete(id);
  }

  private async sendRange(id: string, out: Writable, start: number, end: number): Promise<void> {
    const abort = new AbortController();
    const gone = () => abort.abort();
    out.once('close', gone);
    try {
      const object = await this.bucket.client.send(
        new GetObjectCommand({ Bucket: this.bucket.name, Key: this.bucket.keyOf(id), Range: `bytes=${start}-${end}` }),
        { abortSignal: abort.signal },
      );
      await pipeline(object.Body as Readable, exactly(end - start + 1), out);
    } catch (error) {
      // A client that went away is no failure of the store.
      if (out.destroyed || abort.signal.aborted) return;
      if (isMissing(error)) {
        this.forget(id);
        throw new StoredFileGone(id);
      }
      throw bucketFailure(this.bucket, 'send a file', error);
    } finally {
      out.off('close', gone);
    }
  }
}

/**
 * Exactly `bytes` bytes of the store's answer: a store that sends more than the range asked for
 * (s3rver sends the whole object for `bytes=0-0`) must not put them after the response's end, and
 * one that sends fewer fails the response rather than ending it short.
 */
function exactly(bytes: number) {
  return async function* (chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    let left = bytes;
    for await (const chunk of chunks) {
      if (chunk.length >= left) {
        yield chunk.subarray(0, left);
        return;
      }
      left -= chunk.length;
      yield chunk;
    }
    if (left > 0) throw new Error(`the store sent ${bytes - left} of the ${bytes} bytes asked for`);
  };
}
