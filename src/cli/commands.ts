import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  createClient,
  formatBytes as bytes,
  ProblemError,
  type CreateDownload,
  type Download,
  type DownloadStatus,
  type VideoDownloadClient,
} from '../client/index.ts';
import { listLine, statusLines } from './format.ts';
import { progressFor } from './progress.ts';

export type Connection = { server: string; apiKey?: string };

/** What a command writes: results on stdout, progress and notes on stderr. */
export type Terminal = { out: NodeJS.WriteStream; err: NodeJS.WriteStream; signal: AbortSignal };

/** Thrown when the person pressed Ctrl-C: the download goes on, only the waiting stops. */
export class Interrupted extends Error {
  static waiting(downloadId: string): Interrupted {
    return new Interrupted(`Stopped waiting. The download goes on; see it with: vds status ${downloadId}`);
  }
}

const clientOf = ({ server, apiKey }: Connection): VideoDownloadClient => createClient({ baseUrl: server, apiKey });

/** How long a single request may go unanswered (waiting for a download is not one). */
export const ANSWER_TIMEOUT_MS = 30_000;
const answered = (signal: AbortSignal) => AbortSignal.any([signal, AbortSignal.timeout(ANSWER_TIMEOUT_MS)]);

/**
 * Where `-o` puts the file. A path that ends in a separator, or an existing directory, is a folder
 * to save into under the download's own name (one ending in a separator is made when missing: the
 * person said it is a folder); anything else names the file, in a folder that must exist.
 */
type Output = { folder: string; file?: string };

async function outputOf(output: string | undefined): Promise<Output> {
  if (output === undefined) return { folder: '.' };
  if (/[\\/]$/.test(output)) {
    await mkdir(output, { recursive: true }).catch(() => undefined);
    return { folder: output };
  }
  const isDir = await stat(output).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  return isDir ? { folder: output } : { folder: path.dirname(output), file: output };
}

/** The folder the file will go to must take it: found out before the download, not after. */
async function checkWritable({ folder }: Output): Promise<void> {
  await access(folder, constants.W_OK).catch(() => {
    throw new Error(`Cannot write into ${folder}; choose another -o.`);
  });
}

export type GetOptions = {
  output?: string;
  quality: 'best' | 'worst' | number;
  filename?: string;
  audio?: boolean;
  audioFormat?: 'best' | 'm4a' | 'mp3' | 'opus';
  mute?: boolean;
  subs?: string[];
};

/** The create request `vds get` sends for its options. */
function createRequest(url: string, options: GetOptions): CreateDownload {
  return {
    url,
    quality: options.quality,
    ...(options.filename ? { filename: options.filename } : {}),
    ...(options.audio ? { mode: 'audio' as const, ...(options.audioFormat ? { audio_format: options.audioFormat } : {}) } : {}),
    ...(options.mute ? { mode: 'mute' as const } : {}),
    ...(options.subs ? { subtitles: options.subs } : {}),
  };
}

/** Creates a download, follows it, saves its file and checks its sha256. */
export async function get(connection: Connection, url: string, options: GetOptions, { out, err, signal }: Terminal): Promise<void> {
  const vds = clientOf(connection);
  const output = await outputOf(options.output);
  await checkWritable(output);
  const created = await vds.create(createRequest(url, options), { signal: answered(signal) }).catch((error: unknown) => {
    // The request may have reached the service before the answer was given up on.
    throw signal.aborted ? new Interrupted('Stopped before the service answered; vds list shows whether the download was created.') : error;
  });
  err.write(`download ${created.id}\n`);
  const progress = progressFor(err);
  const interrupted = (error: unknown) => {
    progress.end();
    throw signal.aborted ? Interrupted.waiting(created.id) : error;
  };
  const done = await vds.wait(created.id, { signal, onProgress: (download) => progress.download(download) }).catch(interrupted);
  if (done.status !== 'completed' || !done.file) throw ProblemError.ended(done);
  const target = output.file ?? path.join(output.folder, done.file.filename);
  const saved = await vds
    .save(created.id, target, { signal, onBytes: ({ received_bytes, total_bytes }) => progress.saving(received_bytes, total_bytes) })
    .catch(interrupted);
  progress.end();
  out.write(`${saved.path}\n`);
  err.write(`saved ${bytes(saved.size_bytes)}, sha256 ${saved.sha256} checked\n`);
}

export async function status(connection: Connection, id: string, { out, signal }: Terminal): Promise<void> {
  const download = await clientOf(connection).get(id, { signal: answered(signal) });
  out.write(`${statusLines(download).join('\n')}\n`);
}

export type ListOptions = { status?: DownloadStatus[]; limit?: number; cursor?: string };

export async function list(connection: Connection, options: ListOptions, { out, err, signal }: Terminal): Promise<void> {
  const page = await clientOf(connection).list(options, { signal: answered(signal) });
  for (const download of page.items) out.write(`${listLine(download)}\n`);
  if (!page.items.length) err.write('no downloads\n');
  if (page.next_cursor) err.write(`more: vds list --cursor ${page.next_cursor}\n`);
}

export async function cancel(connection: Connection, id: string, { out, signal }: Terminal): Promise<void> {
  const download: Download = await clientOf(connection).cancel(id, { signal: answered(signal) });
  out.write(download.status === 'expired' ? `${id}: its file is removed (expired)\n` : `${id}: ${download.status}\n`);
}
