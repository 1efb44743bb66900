import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { DownloadError } from '../../core/errors.ts';
import { fileWriter, type FileWriter } from '../../files/file-writer.ts';
import { addSpan, spanBytes, type Span } from '../../files/spans.ts';
import type { HeldTransfer, Transfer, Transfers } from '../transfer.ts';
import { bucketFailure, isMissing, statusOf, type Bucket } from './bucket.ts';
import type { CompletedTransfers } from './completed-transfers.ts';
import { partWriter } from './part-writer.ts';
import type { PartRecord, TransferRecord, TransferRecords } from './transfer-records.ts';

// With S3 a direct file streams into a multipart upload at its finished file's key, each completed
// part recorded in PostgreSQL (transfer-records.ts). A worker on any machine resumes it from the
// end of the last completed part; once the upload completes, the bytes it never had are read back
// from the object, so that ffmpeg has the whole file on its local disk.

const MIN_PART_BYTES = 8 * 1024 * 1024;
/** S3's limit of parts per upload. */
const MAX_PARTS = 10_000;
const LOCAL_FILE = 'direct.part';

export class S3Transfers implements Transfers {
  constructor(
    private readonly bucket: Bucket,
    private readonly records: TransferRecords,
    private readonly completed: CompletedTransfers,
    private readonly maxFileBytes: number,
  ) {}

  open(id: string, folder: string): Transfer {
    const partBytes = Math.max(MIN_PART_BYTES, Math.ceil(this.maxFileBytes / MAX_PARTS));
    return new S3Transfer(id, path.join(folder, LOCAL_FILE), partBytes, this.bucket, this.records, this.completed);
  }

  async discard(id: string): Promise<void> {
    this.completed.forget(id);
    const record = await this.records.find(id);
    if (!record) return;
    // A completed upload is the download's file (or nothing once it is removed): only an unfinished one is aborted.
    if (!record.completed && !(await abortUpload(this.bucket, record))) return;
    await this.records.remove(id);
  }

  ids(): Promise<string[]> {
    return this.records.ids();
  }
}

/**
 * Aborts an unfinished upload, so that its parts stop taking room in the bucket: true once it is
 * gone, or the store says it cannot be (s3rver has no AbortMultipartUpload; a lifecycle rule of
 * the bucket is the backstop, docs/operating.md), false when it may be tried again later.
 */
async function abortUpload(bucket: Bucket, record: TransferRecord): Promise<boolean> {
  try {
    await bucket.client.send(new AbortMultipartUploadCommand({ Bucket: bucket.name, Key: record.key, UploadId: record.uploadId }));
    return true;
  } catch (error) {
    const status = statusOf(error);
    return isMissing(error) || status === 405 || status === 501;
  }
}

class S3Transfer implements Transfer {
  /** The bytes an earlier attempt kept in the bucket, which this machine's file may not hold. */
  private kept: Span[] = [];
  /** The upload the bytes go to, once held() or begin() knows it. */
  private upload: { uploadId: string; key: string } | null = null;
  private heldOnce: Promise<HeldTransfer | null> | null = null;

  constructor(
    private readonly id: string,
    readonly file: string,
    /** The size of new uploads' parts; a resumed one keeps its own (R2, for one, wants every part but the last alike). */
    private partBytes: number,
    private readonly bucket: Bucket,
    private readonly records: TransferRecords,
    private readonly completed: CompletedTransfers,
  ) {}

  get grain(): number {
    return this.partBytes;
  }

  /** Read once per attempt (a Transfer is opened for one): asked first whether to resume at all, then where from. */
  held(): Promise<HeldTransfer | null> {
    this.heldOnce ??= this.readHeld();
    return this.heldOnce;
  }

  private async readHeld(): Promise<HeldTransfer | null> {
    const record = await this.records.find(this.id);
    this.kept = [];
    this.upload = record && !record.completed ? { uploadId: record.uploadId, key: record.key } : null;
    if (!record) return null;
    this.partBytes = record.partBytes;
    // An upload completed into an object that is gone since (removed by hand, say) holds nothing.
    if (record.completed && !(await this.holds(record))) return null;
    // Only a part in its own place counts: it is uploaded again otherwise, under the same number.
    for (const part of record.parts.filter((part) => inPlace(part, record))) this.kept = addSpan(this.kept, part.firstByte, part.firstByte + part.bytes);
    if (spanBytes(this.kept) === 0) return null;
    return { url: record.url, total: record.total, kept: this.kept };
  }

  async begin(url: string, total: number | null): Promise<void> {
    const earlier = await this.records.find(this.id);
    if (earlier && !earlier.completed) await abortUpload(this.bucket, earlier);
    const key = this.bucket.keyOf(this.id);
    const created = await this.bucket.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket.name, Key: key })).catch((error: unknown) => {
      throw bucketFailure(this.bucket, 'start an upload', error);
    });
    this.upload = { uploadId: created.UploadId!, key };
    await this.records.begin(this.id, { ...this.upload, url, total, partBytes: this.partBytes });
    await writeFile(this.file, '');
    this.kept = [];
    this.heldOnce = Promise.resolve(null);
  }

  writer(start: number): FileWriter {
    const upload = this.upload;
    if (!upload) throw new DownloadError('internal_error', 'No upload was started for this file.', true);
    return partWriter({
      file: this.file,
      from: start,
      partBytes: this.partBytes,
      sink: {
        upload: async ({ number, firstByte, bytes, body }, signal) => {
          const { uploadId, key } = upload;
          const sent = await this.bucket.client
            .send(
              new UploadPartCommand({
                Bucket: this.bucket.name,
                Key: key,
                UploadId: uploadId,
                PartNumber: number,
                Body: body,
                ContentLength: bytes,
              }),
              { abortSignal: signal },
            )
            .catch((error: unknown) => {
              throw bucketFailure(this.bucket, `take part ${number} of a file`, error);
            });
          if (!(await this.records.addPart(this.id, uploadId, { number, etag: sent.ETag!, firstByte, bytes }))) {
            throw new DownloadError('internal_error', 'Another attempt started this file over while this one was uploading it.', true);
          }
        },
      },
    });
  }

  async finish(size: number): Promise<void> {
    const record = await this.records.find(this.id);
    if (!record) throw new DownloadError('internal_error', 'The record of this upload is gone.', true);
    if (!coversExactly(record, size)) throw new DownloadError('internal_error', `The parts uploaded of this file are not its ${size} bytes.`, true);
    if (!record.completed) {
      await this.bucket.client
        .send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket.name,
            Key: record.key,
            UploadId: record.uploadId,
            MultipartUpload: { Parts: record.parts.map((part) => ({ PartNumber: part.number, ETag: part.etag })) },
          }),
        )
        .catch(async (error: unknown) => {
          // Completed already by an attempt that stopped before it could record so (S3 then says
          // NoSuchUpload, some stores another error): the object tells.
          if (!(await this.holds(record))) throw bucketFailure(this.bucket, 'complete an upload', error);
        });
      await this.records.markCompleted(this.id, record.uploadId);
    }
    for (const span of this.kept) await this.readBack(record.key, span);
    await truncate(this.file, size);
    await this.completed.remember(this.id, this.file);
  }

  /** Whether the object is there with every byte of the record's parts. */
  private async holds(record: TransferRecord): Promise<boolean> {
    const head = await this.bucket.client.send(new HeadObjectCommand({ Bucket: this.bucket.name, Key: record.key })).catch(() => null);
    return head?.ContentLength === sizeOf(record);
  }

  /** Writes a span of the object into the local file, which lacks it (it was kept elsewhere). */
  private async readBack(key: string, { start, end }: Span): Promise<void> {
    try {
      const object = await this.bucket.client.send(new GetObjectCommand({ Bucket: this.bucket.name, Key: key, Range: `bytes=${start}-${end - 1}` }));
      await pipeline(object.Body as Readable, fileWriter(this.file, start));
    } catch (error) {
      throw bucketFailure(this.bucket, 'give back the bytes kept of a file', error);
    }
  }
}

function sizeOf(record: TransferRecord): number {
  return record.parts.reduce((sum, part) => sum + part.bytes, 0);
}

/** Whether a part sits where its number puts it, and is whole unless it ends the file. */
function inPlace(part: PartRecord, record: TransferRecord): boolean {
  const end = part.firstByte + part.bytes;
  return (
    part.firstByte === (part.number - 1) * record.partBytes &&
    (part.bytes === record.partBytes || (record.total === null ? part.bytes <= record.partBytes : end === record.total))
  );
}

/** Whether the parts, in order, are the file's `size` bytes with no gap or overlap. */
function coversExactly(record: TransferRecord, size: number): boolean {
  let at = 0;
  for (const part of record.parts) {
    if (part.firstByte !== at) return false;
    at += part.bytes;
  }
  return at === size;
}
