import { stat } from 'node:fs/promises';
import { sha256OfFile } from '../storage/hash.ts';
import type { FileCodecs } from './codecs.ts';
import type { RemuxedFile } from './remux.ts';

export type DescribedFile = Omit<RemuxedFile, 'info'> & {
  sizeBytes: number;
  sha256: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  codecs: FileCodecs;
};

/** What the API says about a file ffmpeg wrote: its size and sha256, and what ffmpeg said of it as it wrote it (duration, picture size, codecs). */
export async function describe(written: RemuxedFile, signal: AbortSignal): Promise<DescribedFile> {
  const { info, ...file } = written;
  const sha256 = await sha256OfFile(file.path, signal);
  const { durationSeconds, width, height, codecs } = info;
  return { ...file, sizeBytes: (await stat(file.path)).size, sha256, durationSeconds, width, height, codecs };
}
