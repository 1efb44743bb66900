import { createWriteStream } from 'node:fs';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { HeldTransfer, Transfer, Transfers } from '../transfer.ts';
import { sizeOf } from '../work-folders.ts';

// With local storage a direct file is kept in the working folder itself, which a retry on the same
// disk finds: the bytes, the URL they come from and the length the source gave.

const BYTES = 'direct.part';
/** The URL the bytes come from, which is not the download's URL when that was a page. */
const SOURCE = 'direct.url';
/** The whole file's length as the answer that started the file gave it, when it did. */
const LENGTH = 'direct.length';
// Fewer, larger writes: the default 16 KiB makes the disk side the bottleneck of a fast source.
const WRITE_BUFFER_BYTES = 1024 * 1024;

export class LocalTransfers implements Transfers {
  open(_id: string, folder: string): Transfer {
    return new LocalTransfer(folder);
  }

  /** Nothing is kept outside the working folder. */
  async discard(): Promise<void> {}

  ids(): Promise<string[]> {
    return Promise.resolve([]);
  }
}

class LocalTransfer implements Transfer {
  readonly file: string;

  constructor(private readonly folder: string) {
    this.file = path.join(folder, BYTES);
  }

  async held(): Promise<HeldTransfer | null> {
    const bytes = await sizeOf(this.file);
    if (!bytes) return null;
    const url = await readFile(path.join(this.folder, SOURCE), 'utf8').catch(() => null);
    if (url === null) return null;
    const length = await readFile(path.join(this.folder, LENGTH), 'utf8').catch(() => '');
    return { url, total: length === '' ? null : Number(length), bytes };
  }

  async begin(url: string, total: number | null): Promise<void> {
    await truncate(this.file).catch(() => {});
    await writeFile(path.join(this.folder, SOURCE), url);
    await writeFile(path.join(this.folder, LENGTH), total === null ? '' : String(total));
  }

  writer(from: number): Writable {
    return createWriteStream(this.file, { flags: from > 0 ? 'a' : 'w', highWaterMark: WRITE_BUFFER_BYTES });
  }

  async finish(): Promise<void> {}
}
