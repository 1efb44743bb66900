import { readFile, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseJson } from '../../core/json.ts';
import { fileWriter, replaceWhole, type FileWriter } from '../../files/file-writer.ts';
import { addSpan, spanBytes, spansFrom, type Span } from '../../files/spans.ts';
import { sizeOf } from '../../files/work-folders.ts';
import type { HeldTransfer, Transfer, Transfers } from '../transfer.ts';

// With local storage a direct file is kept in the working folder itself, which a retry on the same
// disk finds: the bytes, the URL they come from, the length the source gave, and which spans of the
// file are written (pieces arrive over several connections, so its size does not tell).

const BYTES = 'direct.part';
/** The URL the bytes come from, which is not the download's URL when that was a page. */
const SOURCE = 'direct.url';
/** The whole file's length as the answer that started the file gave it, when it did. */
const LENGTH = 'direct.length';
/** The spans written, as JSON; it lags the bytes (it is saved at most once a second), never leads them. */
const KEPT = 'direct.kept';
const SAVE_EVERY_MS = 1000;

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
  readonly grain = 1;
  private kept: Span[] = [];
  private saving: Promise<void> = Promise.resolve();
  private savedAt = 0;

  constructor(private readonly folder: string) {
    this.file = path.join(folder, BYTES);
  }

  async held(): Promise<HeldTransfer | null> {
    const url = await readFile(path.join(this.folder, SOURCE), 'utf8').catch(() => null);
    if (url === null) return null;
    const size = (await sizeOf(this.file)) ?? 0;
    const recorded = await readFile(path.join(this.folder, KEPT), 'utf8').catch(() => '[]');
    this.kept = spansFrom(parseJson(recorded), size);
    if (spanBytes(this.kept) === 0) return null;
    const length = await readFile(path.join(this.folder, LENGTH), 'utf8').catch(() => '');
    return { url, total: length === '' ? null : Number(length), kept: this.kept };
  }

  async begin(url: string, total: number | null): Promise<void> {
    this.kept = [];
    await this.save();
    await writeFile(this.file, '');
    await writeFile(path.join(this.folder, SOURCE), url);
    await writeFile(path.join(this.folder, LENGTH), total === null ? '' : String(total));
  }

  writer(start: number): FileWriter {
    return fileWriter(this.file, start, {
      written: (from, to) => {
        this.kept = addSpan(this.kept, from, to);
        if (Date.now() - this.savedAt >= SAVE_EVERY_MS) void this.save().catch(() => {});
      },
      // What a stopped writer wrote is kept for the next attempt as well.
      closed: () => this.save(),
    });
  }

  async finish(size: number): Promise<void> {
    await this.saving;
    await truncate(this.file, size);
  }

  /** Writes the spans down, one save after another, each whole (a new file renamed over the old). */
  private save(): Promise<void> {
    this.savedAt = Date.now();
    this.saving = this.saving.catch(() => {}).then(() => replaceWhole(path.join(this.folder, KEPT), JSON.stringify(this.kept)));
    return this.saving;
  }
}
