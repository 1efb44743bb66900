import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

// Where a download is assembled (segments, the direct file, ffmpeg's output): a local folder per
// download, kept across attempts so that a retry on this machine resumes what is there. It is not
// the store: with local storage it lies under DATA_DIR, with S3 under TMPDIR.

export class WorkFolders {
  constructor(readonly root: string) {}

  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }

  /** The folder of one download, made on demand. */
  async folder(id: string): Promise<string> {
    const dir = path.join(this.root, id);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async discard(id: string): Promise<void> {
    await rm(path.join(this.root, id), { recursive: true, force: true });
  }

  /** Ids that have a folder. */
  async ids(): Promise<string[]> {
    return readdir(this.root).catch(() => []);
  }
}

/** A local file's size; null when there is no file, which an empty one must not be mistaken for. */
export async function sizeOf(file: string): Promise<number | null> {
  return stat(file).then(
    (stats) => stats.size,
    () => null,
  );
}
