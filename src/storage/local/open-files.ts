import { open, stat, type FileHandle } from 'node:fs/promises';

// Stored files never change once they are in place, so one open descriptor serves every request
// for a file, each reading at its own offset. Without it, each request stats, opens and closes
// the file: an eighth of the service's time under a load of 1 MiB ranges. An entry is closed once
// idle. Its path is checked again at most every REVALIDATE_MS, because another process may have
// removed the file (a cancel, the retention sweep): such a file stops being served within about a
// second, where a stat per request would have noticed at once.

const IDLE_MS = 2_000;
const REVALIDATE_MS = 1_000;

export type OpenFile = { handle: FileHandle; size: number };

type Entry = {
  opened: Promise<(OpenFile & { ino: number; dev: number }) | null>;
  users: number;
  checkedAt: number;
  idle?: NodeJS.Timeout;
  evicted: boolean;
};

export class OpenFiles {
  private readonly entries = new Map<string, Entry>();

  /** Runs `use` with `file` open; null, without calling it, when there is no such file. */
  async use<T>(file: string, use: (opened: OpenFile) => Promise<T>): Promise<T | null> {
    const entry = await this.acquire(file);
    try {
      // A file that is not there (or cannot be opened) is not remembered: the next request asks again.
      const opened = await entry.opened.catch((error: unknown) => {
        this.forget(file, entry);
        throw error;
      });
      if (!opened) this.forget(file, entry);
      return opened ? await use(opened) : null;
    } finally {
      this.release(file, entry);
    }
  }

  /** Forgets `file`: the next request opens it again (or finds it gone). */
  evict(file: string): void {
    const entry = this.entries.get(file);
    if (entry) this.forget(file, entry);
  }

  /** Closes every descriptor; for a service that stops. */
  closeAll(): void {
    for (const file of [...this.entries.keys()]) this.evict(file);
  }

  private forget(file: string, entry: Entry): void {
    if (this.entries.get(file) === entry) this.entries.delete(file);
    if (entry.evicted) return;
    entry.evicted = true;
    if (entry.users === 0) this.close(entry);
  }

  private async acquire(file: string): Promise<Entry> {
    let entry = this.entries.get(file);
    if (entry && Date.now() - entry.checkedAt > REVALIDATE_MS) {
      entry.checkedAt = Date.now();
      if (!(await this.stillThere(file, entry))) this.forget(file, entry);
      entry = this.entries.get(file);
    }
    if (!entry) {
      entry = { opened: openWithIdentity(file), users: 0, checkedAt: Date.now(), evicted: false };
      this.entries.set(file, entry);
    }
    entry.users++;
    clearTimeout(entry.idle);
    return entry;
  }

  private release(file: string, entry: Entry): void {
    entry.users--;
    if (entry.users > 0) return;
    if (entry.evicted) {
      this.close(entry);
      return;
    }
    entry.idle = setTimeout(() => this.forget(file, entry), IDLE_MS).unref();
  }

  /** Whether the path still names the file the entry holds open, as it was (a file cut short by hand is opened again). */
  private async stillThere(file: string, entry: Entry): Promise<boolean> {
    const opened = await entry.opened.catch(() => null);
    const now = await stat(file).catch(() => null);
    return opened !== null && now !== null && now.ino === opened.ino && now.dev === opened.dev && now.size === opened.size;
  }

  private close(entry: Entry): void {
    clearTimeout(entry.idle);
    void entry.opened.then((opened) => opened?.handle.close()).catch(() => {});
  }
}

async function openWithIdentity(file: string): Promise<(OpenFile & { ino: number; dev: number }) | null> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const { size, ino, dev } = await handle.stat();
    return { handle, size, ino, dev };
  } catch (error) {
    await handle.close();
    throw error;
  }
}
