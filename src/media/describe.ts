import { stat } from 'node:fs/promises';
import { sha256OfFile } from '../storage/hash.ts';
import type { FileCodecs } from './codecs.ts';
import { probe } from './probe.ts';
import type { RemuxedFile } from './remux.ts';

export type DescribedFile = RemuxedFile & {
  sizeBytes: number;
  sha256: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  codecs: FileCodecs;
};

/** What the API says about a file ffmpeg wrote: its size, sha256, duration, picture size and codecs. */
export async function describe(ffmpeg: string, file: RemuxedFile, signal: AbortSignal): Promise<DescribedFile> {
  const sha256 = await sha256OfFile(file.path, signal);
  const { durationSeconds, width, height, codecs } = await probe({ ffmpeg, file: file.path, signal });
  return { ...file, sizeBytes: (await stat(file.path)).size, sha256, durationSeconds, width, height, codecs };
}
