import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FileStore, StoredFile } from '../store.ts';
import { OpenFiles } from './open-files.ts';
import { writeBytes } from './write-bytes.ts';

// Finished files under DATA_DIR/files, each moved into place with one rename from the working
// folder on the same disk, so that a complete file is never half-written where a reader finds it.

export class LocalStore implements FileStore {
  readonly kind = 'local';
  /** Local files have no link of their own: the service sends them (or nginx, FILE_OFFLOAD). */
  readonly redirects = false;
  readonly root: string;
  private readonly openFiles = new OpenFiles();

  constructor(dataDir: string) {
    this.root = path.join(dataDir, 'files');
  }

  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }

  private pathOf(id: string): string {
    return path.join(this.root, id);
  }

  async put(id: string, file: string): Promise<void> {
    await rename(file, this.pathOf(id));
  }

  read<T>(id: string, use: (file: StoredFile) => Promise<T>): Promise<T | null> {
    return this.openFiles.use(this.pathOf(id), ({ handle, size }) => use({ size, sendTo: (out, start, end) => writeBytes(out, handle, start, end) }));
  }

  /** A stat: no descriptor is opened (or kept, with a second's doubt about the file) for a file only looked for. */
  async has(id: string): Promise<boolean> {
    return !(await this.missingAmong([id])).length;
  }

  /** A stat costs too little to keep its answer. */
  hasLately(id: string): Promise<boolean> {
    return this.has(id);
  }

  /** A stat each. */
  async missingAmong(ids: string[]): Promise<string[]> {
    const missing = await Promise.all(
      ids.map((id) =>
        stat(this.pathOf(id)).then(
          () => null,
          (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? id : null),
        ),
      ),
    );
    return missing.filter((id) => id !== null);
  }

  async remove(id: string): Promise<void> {
    await rm(this.pathOf(id), { force: true });
    // After the removal: a request that opened the file while it was being removed must not leave
    // it open for the next ones.
    this.openFiles.evict(this.pathOf(id));
  }

  presign(): Promise<null> {
    return Promise.resolve(null);
  }

  problem(): Promise<null> {
    return Promise.resolve(null);
  }

  close(): void {
    this.openFiles.closeAll();
  }
}
