import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config/index.ts';
import type { Prisma } from '../db/prisma.ts';
import { WorkFolders } from '../files/work-folders.ts';
import { LocalStore } from './local/local-store.ts';
import { LocalTransfers } from './local/local-transfers.ts';
import type { FileStore } from './store.ts';
import type { Transfers } from './transfer.ts';

export { StoreUnavailable, StoredFileGone, type FileStore, type StoredFile } from './store.ts';
export type { Transfer } from './transfer.ts';

/** Where a download's bytes are at each stage: its working folder, its kept direct transfer, its finished file. */
export type Storage = {
  files: FileStore;
  work: WorkFolders;
  transfers: Transfers;
  /** Drops what a download has on the way to its file (working folder, kept transfer); its file, if any, stays. */
  discardWork(id: string): Promise<void>;
  /** Drops everything of a download that ends without a file: its work, and any object a transfer completed. */
  discardAll(id: string): Promise<void>;
  /** Ids that have work somewhere: a working folder here, or a transfer kept for any machine. */
  workIds(): Promise<string[]>;
  close(): void;
};

let loadingS3: Promise<typeof import('./s3/index.ts')> | undefined;

/**
 * The AWS SDK, loaded only where it is used: it holds some 25 MB in every process. One import for
 * all the services a process starts, since concurrent imports of one module trip Jest's linker.
 */
function s3Layer(): Promise<typeof import('./s3/index.ts')> {
  loadingS3 ??= import('./s3/index.ts');
  return loadingS3;
}

type Parts = { files: FileStore; transfers: Transfers; workRoot: string };

/** Every kind of store, by the name STORAGE gives it. */
const STORES: Record<Config['storage']['kind'], (config: Config, prisma: Prisma) => Promise<Parts>> = {
  local: async (config) => {
    const files = new LocalStore(config.dataDir);
    await files.init();
    return { files, transfers: new LocalTransfers(), workRoot: path.join(config.dataDir, 'partial') };
  },
  s3: async (config, prisma) => {
    if (config.storage.kind !== 's3') throw new Error('not S3 settings');
    const { openBucket } = await s3Layer();
    const { bucket, files, transfers } = openBucket(config.storage, prisma, config.maxFileBytes);
    return {
      files,
      transfers,
      // Scratch on this machine only, while it works: nothing is shared through it. Named for the
      // bucket and the database, so that services of other deployments on this machine (another
      // bucket, or the same one with another database) never sweep each other's folders.
      workRoot: path.join(os.tmpdir(), `vds-work-${shortHash([bucket.identity(), config.databaseUrl ?? path.resolve(config.dataDir)])}`),
    };
  },
};

function shortHash(parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 12);
}

export async function openStorage(config: Config, prisma: Prisma): Promise<Storage> {
  const { files, transfers, workRoot } = await STORES[config.storage.kind](config, prisma);
  const work = new WorkFolders(workRoot);
  await work.init();
  const discardWork = async (id: string) => {
    await work.discard(id);
    await transfers.discard(id);
  };
  return {
    files,
    work,
    transfers,
    discardWork,
    async discardAll(id) {
      await discardWork(id);
      await files.remove(id);
    },
    async workIds() {
      return [...new Set([...(await work.ids()), ...(await transfers.ids())])];
    },
    close: () => files.close(),
  };
}
