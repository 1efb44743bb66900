import type { Prisma } from '../../db/prisma.ts';
import { Bucket, type S3Settings } from './bucket.ts';
import { CompletedTransfers } from './completed-transfers.ts';
import { S3Store } from './s3-store.ts';
import { S3Transfers } from './s3-transfers.ts';
import { TransferRecords } from './transfer-records.ts';

/** The store and the transfers of one bucket, which share what a transfer completed into it. */
export function openBucket(settings: S3Settings, prisma: Prisma, maxFileBytes: number): { bucket: Bucket; files: S3Store; transfers: S3Transfers } {
  const bucket = new Bucket(settings);
  const completed = new CompletedTransfers();
  return {
    bucket,
    files: new S3Store(bucket, completed, settings.retrieval === 'redirect' ? settings.presignSeconds : null),
    transfers: new S3Transfers(bucket, new TransferRecords(prisma), completed, maxFileBytes),
  };
}
