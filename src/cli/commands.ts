import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  createClient,
  formatBytes as bytes,
  formatDuration,
  ProblemError,
  type Collection,
  type CreateCollection,
  type CreateDownload,
  type Download,
  type DownloadStatus,
  type VideoDownloadClient,
} from '../client/index.ts';
import { folderName, outcomeLines, saveCollection } from './collection.ts';
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

  static waitingForCollection(collectionId: string): Interrupted {
    return new Interrupted(
      `Stopped waiting. The collection goes on; see its downloads with: vds list --collection ${collectionId}, or stop the rest: vds cancel ${collectionId}`,
    );
  }
}

/** Entries of several were saved, but not all: the command says which, then exits 1. */
export class SomeMissing extends Error {}

export const clientOf = ({ server, apiKey }: Connection): VideoDownloadClient => createClient({ baseUrl: server, apiKey });

/** How long a single request may go unanswered (waiting for a download is not one). */
export const ANSWER_TIMEOUT_MS = 30_000;
export const answered = (signal: AbortSignal) => AbortSignal.any([signal, AbortSignal.timeout(ANSWER_TIMEOUT_MS)]);

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

/** The options that say what each file is to be (vds get, vds subscribe). */
export type Template = {
  quality: 'best' | 'worst' | number;
  audio?: boolean;
  audioFormat?: 'best' | 'm4a' | 'mp3' | 'opus';
  mute?: boolean;
  subs?: string[];
  /** Only this part of each video. */
  clip?: CreateDownload['clip'];
};

export type GetOptions = Template & {
  output?: string;
  filename?: string;
  /** The first N entries of a URL that holds several (the collection's limit). */
  first?: number;
  /** Only these positions of a URL that holds several, as `vds entries` numbers them. */
  pick?: number[];
  /** The collection's name, and so its folder's. */
  name?: string;
};

/** What each file is to be, for one download or every child of a collection or a subscription. */
export function template(options: Template): Pick<CreateDownload, 'quality' | 'mode' | 'audio_format' | 'subtitles' | 'clip'> {
  return {
    quality: options.quality,
    ...(options.audio ? { mode: 'audio' as const, ...(options.audioFormat ? { audio_format: options.audioFormat } : {}) } : {}),
    ...(options.mute ? { mode: 'mute' as const } : {}),
    ...(options.subs ? { subtitles: options.subs } : {}),
    ...(options.clip ? { clip: options.clip } : {}),
  };
}

type Request = { one: CreateDownload; many?: never } | { many: CreateCollection; one?: never };

/**
 * What `vds get` asks for: one download, or a collection. Several URLs are a batch; `--pick` chose
 * entries of a list. Otherwise a preview (the service reads the source and creates nothing) tells
 * whether the URL holds several entries. A preview rather than always a collection: it is answered
 * at once by the API, where a collection waits for a worker to expand it, and one video then goes
 * on exactly as before. A service without collections (404) or one that finds no list at the URL
 * (422) means one download, which reads the source itself and says what is wrong with it.
 */
async function requestOf(vds: VideoDownloadClient, urls: string[], options: GetOptions, signal: AbortSignal): Promise<Request> {
  const [url] = urls as [string, ...string[]];
  const common = options.name ? { name: options.name } : {};
  if (urls.length > 1) return { many: { urls, ...common, ...template(options) } };
  const limit = options.first ? { limit: options.first } : {};
  if (options.pick) return { many: { url, entries: options.pick, ...limit, ...common, ...template(options) } };
  const preview = await vds.collections.preview({ url, ...limit }, { signal: answered(signal) }).catch((error: unknown) => {
    if (error instanceof ProblemError && (error.status === 404 || error.status === 422)) return null;
    throw error;
  });
  if (preview && (preview.entries.length > 1 || preview.truncated)) return { many: { url, ...limit, ...common, ...template(options) } };
  return { one: { url, ...template(options), ...(options.filename ? { filename: options.filename } : {}) } };
}

/**
 * Saves what URLs hold: one video as its file (where -o says), several entries each as its file
 * in a folder named after their collection (the -o folder itself when -o names no existing one).
 */
export async function get(connection: Connection, urls: string[], options: GetOptions, terminal: Terminal): Promise<void> {
  const vds = clientOf(connection);
  const output = await outputOf(options.output);
  await checkWritable(output);
  const { one, many } = await requestOf(vds, urls, options, terminal.signal).catch((error: unknown) => {
    throw terminal.signal.aborted ? new Interrupted('Stopped before the service answered; nothing was created.') : error;
  });
  if (one) return getOne(vds, one, output, terminal);
  if (options.filename) throw new Error('--filename names one file, and this is several; --name names their folder.');
  return getMany(vds, many, output, terminal);
}

async function getOne(vds: VideoDownloadClient, request: CreateDownload, output: Output, { out, err, signal }: Terminal): Promise<void> {
  const created = await vds.create(request, { signal: answered(signal) }).catch((error: unknown) => {
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

async function getMany(vds: VideoDownloadClient, request: CreateCollection, output: Output, { out, err, signal }: Terminal): Promise<void> {
  const created = await vds.collections.create(request, { signal: answered(signal) }).catch((error: unknown) => {
    throw signal.aborted ? new Interrupted('Stopped before the service answered; vds list shows whether downloads were created.') : error;
  });
  err.write(`collection ${created.id}\n`);
  // -o naming no existing folder is the folder itself; otherwise the collection's own goes in it.
  const folderOf = (collection: Collection) => output.file ?? path.join(output.folder, folderName(collection));
  const outcome = await saveCollection(vds, created.id, folderOf, { out, err, signal }).catch((error: unknown) => {
    throw signal.aborted ? Interrupted.waitingForCollection(created.id) : error;
  });
  const lines = outcomeLines(outcome);
  err.write(`${lines.join('\n')}\n`);
  if (outcome.missing.length) throw new SomeMissing(`${outcome.missing.length} of ${outcome.total} entries were not saved (listed above).`);
}

export async function status(connection: Connection, id: string, { out, signal }: Terminal): Promise<void> {
  const download = await clientOf(connection).get(id, { signal: answered(signal) });
  out.write(`${statusLines(download).join('\n')}\n`);
}

export type ListOptions = { status?: DownloadStatus[]; limit?: number; cursor?: string; collection?: string };

export async function list(connection: Connection, { collection, ...options }: ListOptions, { out, err, signal }: Terminal): Promise<void> {
  const page = await clientOf(connection).list({ ...options, ...(collection ? { collection_id: collection } : {}) }, { signal: answered(signal) });
  for (const download of page.items) out.write(`${listLine(download)}\n`);
  if (!page.items.length) err.write('no downloads\n');
  if (page.next_cursor) err.write(`more: vds list${collection ? ` --collection ${collection}` : ''} --cursor ${page.next_cursor}\n`);
}

/** Cancels a download (or removes its file once completed), or, given a collection's id, the rest of that collection. */
export async function cancel(connection: Connection, id: string, { out, signal }: Terminal): Promise<void> {
  const vds = clientOf(connection);
  const download: Download | null = await vds.cancel(id, { signal: answered(signal) }).catch((error: unknown) => {
    if (error instanceof ProblemError && error.status === 404) return null;
    throw error;
  });
  if (download) {
    out.write(download.status === 'expired' ? `${id}: its file is removed (expired)\n` : `${id}: ${download.status}\n`);
    return;
  }
  // No download has that id: a collection may (both are UUIDs).
  const { status, counts } = await vds.collections.cancel(id, { signal: answered(signal) }).catch((error: unknown) => {
    if (!(error instanceof ProblemError && error.status === 404)) throw error;
    throw new ProblemError(404, { ...error.problem, detail: `No download or collection with id ${id}.` });
  });
  out.write(`${id}: collection ${status}; ${counts.completed} of ${counts.total} completed, their files kept\n`);
}

/** `vds entries`: what a URL holds, one numbered line each (the number is what --pick takes). */
export async function entries(connection: Connection, url: string, { first }: { first?: number }, { out, err, signal }: Terminal): Promise<void> {
  const preview = await clientOf(connection).collections.preview({ url, ...(first ? { limit: first } : {}) }, { signal: answered(signal) });
  for (const entry of preview.entries) {
    const duration = entry.duration_seconds !== null ? formatDuration(entry.duration_seconds) : '';
    out.write(`${[String(entry.index).padStart(3), duration.padStart(7), entry.title ?? '', entry.url].join('  ')}\n`);
  }
  const title = preview.title ? `${preview.title}: ` : '';
  err.write(`${title}${preview.entries.length} entries${preview.truncated ? ', and more after them (--first takes more)' : ''}\n`);
}
