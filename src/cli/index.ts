#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { isNetworkError, MAX_INTERVAL_SECONDS, parseClip, parseDuration, ProblemError, problemSentence, type Clip } from '../client/index.ts';
import { ANSWER_TIMEOUT_MS, cancel, entries, get, Interrupted, list, SomeMissing, status, type Connection, type Terminal } from './commands.ts';
import { subscribe, subscriptions, unsubscribe } from './subscriptions.ts';

// `vds`: the service from a shell, on the SDK. Exit 0 when done, 1 when the service or the download
// said no, 2 for a command line that makes no sense, 130 after Ctrl-C.

const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;
const STATUSES = ['queued', 'downloading', 'processing', 'completed', 'failed', 'cancelled', 'expired'] as const;

function quality(value: string): 'best' | 'worst' | number {
  if (value === 'best' || value === 'worst') return value;
  const height = Number(value);
  if (!Number.isInteger(height) || height < 1) throw new InvalidArgumentError('Use best, worst, or a height in pixels such as 720.');
  return height;
}

const AUDIO_FORMATS = ['best', 'm4a', 'mp3', 'opus'] as const;

function audioFormat(value: string): (typeof AUDIO_FORMATS)[number] {
  if (!(AUDIO_FORMATS as readonly string[]).includes(value)) throw new InvalidArgumentError(`Use ${AUDIO_FORMATS.join(', ')}.`);
  return value as (typeof AUDIO_FORMATS)[number];
}

function languages(value: string): string[] {
  const tags = value
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
  if (!tags.length || tags.some((tag) => !/^(?:all|[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*)$/.test(tag))) {
    throw new InvalidArgumentError('Use language tags such as en,pt-BR, or all.');
  }
  return tags;
}

function clip(value: string): Clip {
  const parsed = parseClip(value);
  if (!parsed) throw new InvalidArgumentError('Use start-end such as 1:30-2:00 (or 90-120), or start- for the rest of the video; the start before the end.');
  return parsed;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function downloadId(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('A download id is a UUID, as vds get and vds list print it.');
  return value;
}

function collectionId(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('A collection id is a UUID, as vds get prints it.');
  return value;
}

function subscriptionId(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('A subscription id is a UUID, as vds subscribe and vds subscriptions print it.');
  return value;
}

function interval(value: string): number {
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError('Use a duration such as 90s, 15m, 1h or 1d, or a number of seconds.');
  if (seconds > MAX_INTERVAL_SECONDS) throw new InvalidArgumentError('Use at most 30 days (30d).');
  return seconds;
}

function positive(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('Use a whole number of at least 1.');
  return number;
}

/** The most entries one collection takes (the contract's ceiling on `entries` and `limit`). */
const MOST_ENTRIES = 500;

/** `1,3-5` as the positions 1, 3, 4 and 5, each once, in order. */
function positions(value: string): number[] {
  const chosen = new Set<number>();
  for (const part of value.split(',')) {
    const range = /^\s*(\d{1,3})\s*(?:-\s*(\d{1,3})\s*)?$/.exec(part);
    const [from, to] = [Number(range?.[1]), Number(range?.[2] ?? range?.[1])];
    if (!range || from < 1 || to < from || to > MOST_ENTRIES) {
      throw new InvalidArgumentError(`Use positions from vds entries, such as 1,3-5 (1 to ${MOST_ENTRIES}).`);
    }
    for (let position = from; position <= to; position++) chosen.add(position);
  }
  return [...chosen].sort((a, b) => a - b);
}

function atMostEntries(value: string): number {
  const number = positive(value);
  if (number > MOST_ENTRIES) throw new InvalidArgumentError(`Use at most ${MOST_ENTRIES}.`);
  return number;
}

function backfill(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number > MOST_ENTRIES) throw new InvalidArgumentError(`Use a whole number from 0 to ${MOST_ENTRIES}.`);
  return number;
}

function statuses(value: string): (typeof STATUSES)[number][] {
  const names = value.split(',');
  const unknown = names.filter((name) => !(STATUSES as readonly string[]).includes(name));
  if (unknown.length) throw new InvalidArgumentError(`Unknown status ${unknown.join(', ')}; use ${STATUSES.join(', ')}.`);
  return names as (typeof STATUSES)[number][];
}

const controller = new AbortController();
const terminal: Terminal = { out: process.stdout, err: process.stderr, signal: controller.signal };

const program = new Command('vds')
  .description('Download videos through a video download service.')
  .addOption(new Option('-s, --server <url>', 'the service').env('VDS_SERVER').default('http://127.0.0.1:3000'))
  .addOption(new Option('-k, --api-key <key>', 'one of the service’s API keys').env('VDS_API_KEY'))
  .showHelpAfterError('(vds --help shows how to use it)')
  .addHelpText(
    'after',
    `
Several videos at once (vds get --help for every option):
  vds get PLAYLIST              every entry of a playlist, feed or page, into a folder named after it
  vds get PLAYLIST --first 10   only its first 10 entries
  vds entries PLAYLIST          its entries, numbered; then: vds get PLAYLIST --pick 1,3-5
  vds get URL URL URL --name x  several links (a batch), into x/
One line counts the entries done and the bytes saved; entries without a file are named, and vds exits 1.

New entries of a channel, playlist or feed, downloaded by the service as they appear:
  vds subscribe URL --every 1h  follow it (vds subscribe --help for every option)
  vds subscriptions             what you follow, with each one's last and next check
  vds unsubscribe ID            stop following it; what it downloaded stays`,
  )
  .exitOverride();

const connection = (): Connection => program.opts<Connection>();

program
  .command('get')
  .description('download a video and save its file; a playlist, a feed, a page of several videos, or several URLs: every entry, into one folder')
  .argument('<url...>', 'the video: a file, an HLS or DASH stream, or a page that embeds one; or a list of them; or several URLs (a batch)')
  .option(
    '-o, --output <path>',
    'where to save it: a file, or a directory (made when the path ends in /; default: its name, here); for several entries, the folder they go in (default: a folder named after the collection, here)',
  )
  .option('-q, --quality <quality>', 'best, worst, or a height such as 720', quality, 'best')
  .option('--filename <name>', 'the name the service gives the file')
  .addOption(new Option('--audio', 'the sound only').conflicts('mute'))
  .addOption(new Option('--audio-format <format>', "with --audio: best (the source's own), m4a, mp3 or opus").argParser(audioFormat))
  .addOption(new Option('--mute', 'the picture only'))
  .option('--subs <languages>', 'subtitles to embed: language tags such as en,de, or all', languages)
  .option('--clip <start-end>', 'only this part of the video, such as 1:30-2:00, or 1:30- to its end; cut at the keyframe at or before the start', clip)
  .option('--first <n>', 'of a list: only its first n entries', atMostEntries)
  .option('--pick <positions>', 'of a list: only these entries, as vds entries numbers them: 1,3-5', positions)
  .option('--name <name>', 'of several entries: the name of their collection, and so of their folder')
  .action((urls: string[], options: Parameters<typeof get>[2], command: Command) => {
    // Said as commander says its own usage errors (it prints them, then exits 2).
    if (options.audioFormat && !options.audio) command.error("error: option '--audio-format' goes with '--audio'", { exitCode: EXIT.usage });
    if (urls.length > 1 && (options.first || options.pick))
      command.error("error: options '--first' and '--pick' choose entries of one URL, not of several", { exitCode: EXIT.usage });
    if (urls.length > 1 && options.filename)
      command.error("error: option '--filename' names one file; use '--name' for the folder of several", { exitCode: EXIT.usage });
    return get(connection(), urls, options, terminal);
  });

program
  .command('entries')
  .description('list what a playlist, feed or page holds, numbered for vds get --pick; nothing is downloaded')
  .argument('<url>', 'the playlist, channel, feed or page')
  .option('--first <n>', 'only its first n entries', atMostEntries)
  .action((url: string, options: Parameters<typeof entries>[2]) => entries(connection(), url, options, terminal));

program
  .command('status')
  .description('show a download')
  .argument('<id>', 'the download’s id', downloadId)
  .action((id: string) => status(connection(), id, terminal));

program
  .command('list')
  .description('list downloads, newest first')
  .option('--status <statuses>', 'only these, comma-separated', statuses)
  .option('--limit <n>', 'how many', positive)
  .option('--cursor <cursor>', 'the next page, as the last list said')
  .option('--collection <id>', 'only the downloads of this collection (as vds get printed it), in its order', collectionId)
  .action((options: Parameters<typeof list>[1]) => list(connection(), options, terminal));

program
  .command('cancel')
  .description('cancel a download, or remove its file when it is done; or cancel the rest of a collection')
  .argument('<id>', 'the download’s id, or a collection’s', downloadId)
  .action((id: string) => cancel(connection(), id, terminal));

program
  .command('subscribe')
  .description('follow a channel, a playlist or a feed: the service checks it on a schedule and downloads each new entry')
  .argument('<url>', 'the channel, playlist, feed or page')
  .option('--every <duration>', 'how often to check: 90s, 15m, 1h, 1d, or seconds (default: the service’s, an hour)', interval)
  .option('--backfill <n>', 'also download its newest n entries now (default 0: only what appears from now on)', backfill)
  .option('--match <text>', 'only entries whose title contains this text (ignoring case)')
  .option('--name <name>', 'the subscription’s name (default: the title the source gives)')
  .option('--archive <file>', 'a yt-dlp --download-archive file: its entries count as already downloaded')
  .option('-q, --quality <quality>', 'best, worst, or a height such as 720', quality, 'best')
  .addOption(new Option('--audio', 'the sound only').conflicts('mute'))
  .addOption(new Option('--audio-format <format>', "with --audio: best (the source's own), m4a, mp3 or opus").argParser(audioFormat))
  .addOption(new Option('--mute', 'the picture only'))
  .option('--subs <languages>', 'subtitles to embed: language tags such as en,de, or all', languages)
  .option('--clip <start-end>', 'only this part of each video, such as 0:00-1:00', clip)
  .action((url: string, options: Parameters<typeof subscribe>[2], command: Command) => {
    if (options.audioFormat && !options.audio) command.error("error: option '--audio-format' goes with '--audio'", { exitCode: EXIT.usage });
    return subscribe(connection(), url, options, terminal);
  });

program
  .command('subscriptions')
  .description('list what you follow: id, status, interval, last and next check, entries seen, name or URL')
  .action(() => subscriptions(connection(), terminal));

program
  .command('unsubscribe')
  .description('stop following a channel, playlist or feed; its downloads and collections stay')
  .argument('<id>', 'the subscription’s id, as vds subscriptions prints it', subscriptionId)
  .action((id: string) => unsubscribe(connection(), id, terminal));

/** A sentence for what went wrong, and the exit code that goes with it. */
function failure(error: unknown): [string, number] {
  if (error instanceof CommanderError) return ['', error.exitCode === 0 ? EXIT.ok : EXIT.usage];
  if (error instanceof Interrupted) return [error.message, EXIT.interrupted];
  if (error instanceof SomeMissing) return [error.message, EXIT.failed];
  if (controller.signal.aborted) return ['Stopped before the service answered.', EXIT.interrupted];
  if (error instanceof ProblemError) return [problemSentence(error), EXIT.failed];
  if (error instanceof Error && error.name === 'TimeoutError') {
    return [`The service at ${connection().server} did not answer within ${ANSWER_TIMEOUT_MS / 1000} s; check --server or VDS_SERVER.`, EXIT.failed];
  }
  if (isNetworkError(error)) {
    const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
    return [
      `Could not reach the service at ${connection().server} (${cause?.code ?? cause?.message ?? (error as Error).message}); set --server or VDS_SERVER.`,
      EXIT.failed,
    ];
  }
  return [error instanceof Error ? error.message : String(error), EXIT.failed];
}

process.once('SIGINT', () => controller.abort());
try {
  await program.parseAsync();
} catch (error) {
  const [sentence, code] = failure(error);
  if (sentence) process.stderr.write(`vds: ${sentence}\n`);
  process.exitCode = code;
}
