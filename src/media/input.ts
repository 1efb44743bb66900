import path from 'node:path';
import { DownloadError } from '../core/errors.ts';
import { detectContainer } from './detect-container.ts';
import { mp4IndexFault } from './mp4-index.ts';

/** A local file as ffmpeg is to name it: with its protocol spelled out, so that no part of the name can be taken for another one. */
export function fileUrl(file: string): string {
  return `file:${path.resolve(file)}`;
}

/** A file found to be media that is cut short or damaged (media/mp4-index.ts): it failed to be processed, not to be found. */
export class DamagedMedia extends DownloadError {
  constructor(fault: string) {
    super(
      'processing_failed',
      `The fetched file is cut short, damaged or beyond what the service checks: ${fault}. It was not processed, so that no broken file is handed back.`,
    );
  }
}

/**
 * ffmpeg's arguments that open `file`: from the local disk only, and only with the demuxer of the
 * container that its bytes (or, when they say nothing, `declaredType`) name in the table. Anything
 * else, above all a playlist, a manifest or a concat list, which would have ffmpeg open the files
 * they list, is never handed to ffmpeg. Nor is an MP4-family file (MP4, MOV, M4A, 3GP) whose index
 * points at bytes it does not hold, or whose boxes overrun one another (DamagedMedia): ffmpeg reads
 * one cut after its index (a fast-start file whose transfer ended early) as if it were whole, and
 * only its playback would stop short.
 */
export async function inputArgs(file: string, declaredType: string | null = null): Promise<string[]> {
  const container = await detectContainer(file, declaredType);
  if (!container) {
    throw new DownloadError(
      'unsupported_source',
      'The fetched data is not in a media container the service reads (a playlist, a manifest, a list of files or anything else is refused), so it was not processed.',
    );
  }
  if (container.demuxer === 'mov') {
    const fault = await mp4IndexFault(file);
    if (fault) throw new DamagedMedia(fault);
  }
  return ['-protocol_whitelist', 'file', '-f', container.demuxer, '-i', fileUrl(file)];
}
