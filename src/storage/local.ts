import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { OpenFiles, type OpenFile } from './open-files.ts';

// Files live under DATA_DIR: a download is written to partial/<id>/ (the data survives a crash, so
// a retry resumes it) and moved into files/<id> with one rename, so a complete file is never
// half-written where a reader could find it.

export class LocalStorage {
  readonly partialRoot: string;
  readonly filesRoot: string;
  private readonly openFiles = new OpenFiles();

  constructor(dataDir: string) {
    this.partialRoot = path.join(dataDir, 'partial');
    this.filesRoot = path.join(dataDir, 'files');
  }

  async init(): Promise<void> {
    await mkdir(this.partialRoot, { recursive: true });
    await mkdir(this.filesRoot, { recursive: true });
  }

  /** The working directory of one download, made on demand. */
  async workDir(id: string): Promise<string> {
    const dir = path.join(this.partialRoot, id);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  filePath(id: string): string {
    return path.join(this.filesRoot, id);
  }

  /** Moves a finished file into place atomically and drops the working directory. */
  async commit(id: string, finishedPath: string): Promise<string> {
    const target = this.filePath(id);
    await rename(finishedPath, target);
    await this.discardWork(id);
    return target;
  }

  async discardWork(id: string): Promise<void> {
    await rm(path.join(this.partialRoot, id), { recursive: true, force: true });
  }

  async removeFile(id: string): Promise<void> {
    await rm(this.filePath(id), { force: true });
    // After the removal: a request that opened the file while it was being removed must not leave
    // it open for the next ones.
    this.openFiles.evict(this.filePath(id));
  }

  /** Runs `use` with the stored file of `id` open, for reading; null when it is not there. */
  readStored<T>(id: string, use: (file: OpenFile) => Promise<T>): Promise<T | null> {
    return this.openFiles.use(this.filePath(id), use);
  }

  /** Lets go of the files kept open for reading. */
  close(): void {
    this.openFiles.closeAll();
  }

  /** A file's size; null when there is no file, which an empty one must not be mistaken for. */
  async size(filePath: string): Promise<number | null> {
    return stat(filePath).then(
      (stats) => stats.size,
      () => null,
    );
  }

  /** Ids that have a working directory. */
  async workIds(): Promise<string[]> {
    return readdir(this.partialRoot);
  }
}
