import { stat } from 'node:fs/promises';
import { sha256OfFile } from '../files/hash.ts';
import type { MediaInfo } from './probe.ts';
import type { RemuxedFile } from './output-file.ts';

export type DescribedFile = Omit<RemuxedFile, 'info'> & Omit<MediaInfo, 'streams'> & { sizeBytes: number; sha256: string };

/** What the API says about a file ffmpeg wrote: its size and sha256, and what ffmpeg said of it as it wrote it (duration, picture size, codecs). */
export async function describe(written: RemuxedFile, signal: AbortSignal): Promise<DescribedFile> {
  const { info, ...file } = written;
  const sha256 = await sha256OfFile(file.path, signal);
  const { durationSeconds, width, height, codecs } = info;
  return { ...file, sizeBytes: (await stat(file.path)).size, sha256, durationSeconds, width, height, codecs };
}
