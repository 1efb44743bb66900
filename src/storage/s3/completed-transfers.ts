import { stat } from 'node:fs/promises';

// A direct file that is stored as it came is already in the bucket once its transfer completes
// (the upload goes to the file's own key): putting it again would send every byte twice. The
// transfer tells the store here which local file it completed, and the store skips that one.

type Entry = { file: string; size: number; mtimeMs: number };

export class CompletedTransfers {
  private readonly entries = new Map<string, Entry>();

  async remember(id: string, file: string): Promise<void> {
    const { size, mtimeMs } = await stat(file);
    this.entries.set(id, { file, size, mtimeMs });
  }

  /** Whether `file` is, unchanged, the one the transfer of `id` completed into the bucket; forgets it either way. */
  async isStored(id: string, file: string): Promise<boolean> {
    const entry = this.entries.get(id);
    this.entries.delete(id);
    if (!entry || entry.file !== file) return false;
    const now = await stat(file).catch(() => null);
    return now !== null && now.size === entry.size && now.mtimeMs === entry.mtimeMs;
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}
