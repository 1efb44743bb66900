import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { DownloadError, type ErrorCode } from '../../core/errors.ts';
import { findExecutable, isExecutable } from '../../core/executables.ts';
import { oneLine, withoutControls } from '../../core/text.ts';
import { flatListingOf, type FlatListing } from './flat-playlist.ts';

// Running yt-dlp, confined. It only extracts (`--dump-single-json --no-download`); the service
// fetches what it finds with its own fetchers. Each run gets no shell, a clean environment with a
// HOME of its own (removed afterwards, or by the next start if the process is killed), a time
// limit, a bound on its output, and is killed (its whole process group) on any of those, on the
// download's cancellation, and at shutdown.

/** A yt-dlp the service may run: where it is and what `--version` said. */
export type YtDlp = { path: string; version: string };

export type YtDlpConfig = { ytdlp: 'on' | 'off'; ytdlpPath: string | undefined };

/** Which of yt-dlp's extractors a run may use: the sites' own, the generic page reader, or both. */
export type ExtractorChoice = 'dedicated' | 'generic' | 'all';

export type ExtractOptions = {
  url: string;
  /** The forward proxy every connection of the run goes through; it carries a credential and never appears in an error. */
  proxyUrl: string;
  extractors: ExtractorChoice;
  timeoutMs: number;
  signal: AbortSignal;
  /** A bound on yt-dlp's JSON; default 20 MB. */
  maxOutputBytes?: number;
  /** The hosts the proxy refused to this run (its address policy): a failed run that met one is `blocked_address`. */
  refusedHosts?: () => readonly string[];
  /** Which of the proxy's bounds on the run it went past: a failed run that did is `source_too_large`. */
  exceeded?: () => string | null;
  /**
   * Ends the proxy's credential (`ProxyPass.revoke`): called the moment the run is stopped or its
   * yt-dlp exits, before the extraction settles, and again as it settles (whatever ended it).
   */
  revoke?: () => void;
};

/** The address space a run may take: yt-dlp reads pages and manifests in memory, and a page can be a bomb. */
const MAX_ADDRESS_SPACE_BYTES = 2 * 1024 ** 3;

export const MAX_OUTPUT_BYTES = 20 * 1024 * 1024;
const VERSION_TIMEOUT_MS = 10_000;
const STDERR_TAIL = 64 * 1024;
/** How long yt-dlp's output is read after it exits: what it wrote is in the pipe by then. */
const OUTPUT_AFTER_EXIT_MS = 1000;
const REASON_LENGTH = 200;

// ---------------------------------------------------------------------------------------------
// What yt-dlp answers. Only the fields the service uses are checked; anything else is dropped, and
// a format that does not fit is skipped rather than failing the whole answer.

const text = z.string().nullish();
const count = z.number().nullish();
const headers = z.record(z.string(), z.string()).nullish();

/** The fields a format has, which a result without a `formats` list carries itself. */
const formatFields = {
  format_id: text,
  manifest_url: text,
  protocol: text,
  ext: text,
  vcodec: text,
  acodec: text,
  height: count,
  width: count,
  tbr: count,
  filesize: count,
  // Newer yt-dlp also says 'maybe' (may be DRM, worth trying).
  has_drm: z.union([z.boolean(), z.literal('maybe')]).nullish(),
  http_headers: headers,
};

const formatSchema = z.object({ ...formatFields, url: z.string() });

const tolerantFormats = z.array(z.unknown()).transform((items) =>
  items.flatMap((item) => {
    const parsed = formatSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  }),
);

/** Subtitle files by language (`{"en": [{"ext": "vtt", "url": ...}]}`); an entry that does not fit is dropped. */
const subtitleEntry = z.object({ ext: text, url: z.string(), name: text });
const tolerantSubtitles = z.record(z.string(), z.array(z.unknown())).transform((byLanguage) =>
  Object.fromEntries(
    Object.entries(byLanguage).map(([language, entries]) => [
      language,
      entries.flatMap((entry) => {
        const parsed = subtitleEntry.safeParse(entry);
        return parsed.success ? [parsed.data] : [];
      }),
    ]),
  ),
);

const infoSchema = z.object({
  ...formatFields,
  _type: text,
  extractor_key: text,
  extractor: text,
  title: text,
  is_live: z.boolean().nullish(),
  live_status: text,
  url: text,
  formats: tolerantFormats.nullish(),
  subtitles: tolerantSubtitles.nullish(),
});

const playlistSchema = z.object({
  _type: z.literal('playlist'),
  extractor_key: text,
  extractor: text,
  title: text,
  entries: z.array(z.unknown()).nullish(),
});

export type SiteFormat = z.infer<typeof formatSchema>;
/** One video as yt-dlp describes it: a `formats` list, or (for a single direct file) a `url` of its own. */
export type SiteInfo = z.infer<typeof infoSchema>;

// ---------------------------------------------------------------------------------------------
// Finding it.

/** YTDLP_PATH, else `yt-dlp` on PATH; null when YTDLP=off, when there is none, or when it does not answer `--version`. */
export async function findYtDlp(config: YtDlpConfig): Promise<YtDlp | null> {
  if (config.ytdlp === 'off') return null;
  const file = config.ytdlpPath ?? findExecutable(['yt-dlp']);
  if (!file || !isExecutable(file)) return null;
  const run = await runConfined(file, ['--version'], { timeoutMs: VERSION_TIMEOUT_MS, maxOutputBytes: 1024 }).catch(() => null);
  const version = run?.exitCode === 0 ? run.stdout.toString('utf8').trim() : '';
  return /^[\w.+-]{1,64}$/.test(version) ? { path: file, version } : null;
}

// ---------------------------------------------------------------------------------------------
// Extracting.

const EXTRACTOR_ARGS: Record<ExtractorChoice, string[]> = {
  dedicated: ['--ies', 'default,-generic'],
  generic: ['--ies', 'generic'],
  all: [],
};

/** What yt-dlp finds at `options.url`; rejects with a DownloadError, or with the signal's reason when aborted. */
export async function extract(ytdlp: YtDlp, options: ExtractOptions): Promise<SiteInfo> {
  const args = [
    '--no-playlist',
    // A feed or a page of embeds is a playlist even so; only its first entry is looked into, not thousands.
    '--playlist-items',
    '1',
  ];
  return siteInfoOf(describe(await runExtraction(ytdlp, args, options)));
}

/**
 * The entries of the playlist (a channel, a feed, a page of embeds) at `options.url` as yt-dlp lists
 * them without looking into each (`--flat-playlist`), at most `maxEntries`; or the one video there.
 */
export async function extractFlatPlaylist(ytdlp: YtDlp, options: ExtractOptions & { maxEntries: number }): Promise<FlatListing> {
  return flatListingOf(describe(await runExtraction(ytdlp, ['--flat-playlist', '--playlist-end', String(options.maxEntries)], options)));
}

/** yt-dlp's JSON description of `options.url`, run with `modeArgs`: how much of a playlist it reads. */
async function runExtraction(ytdlp: YtDlp, modeArgs: string[], options: ExtractOptions): Promise<Buffer> {
  try {
    return await runYtDlp(ytdlp, modeArgs, options);
  } finally {
    // Also where no yt-dlp ran (a URL refused, a download cancelled before): no credential outlives its extraction.
    options.revoke?.();
  }
}

async function runYtDlp(ytdlp: YtDlp, modeArgs: string[], options: ExtractOptions): Promise<Buffer> {
  if (!/^https?:\/\//i.test(options.url)) throw new DownloadError('unsupported_source', 'Only http and https URLs are given to yt-dlp.');
  const args = [
    '--dump-single-json',
    ...modeArgs,
    '--ignore-config',
    '--no-cache-dir',
    '--no-download',
    ...EXTRACTOR_ARGS[options.extractors],
    '--',
    options.url,
  ];
  // The proxy is given in the environment rather than with --proxy: so it serves every scheme
  // (an old yt-dlp proxies only http and https with --proxy, and would go to ftp:// directly), and
  // its credential is not on a command line that any local user can read.
  const proxies = Object.fromEntries(
    ['http', 'https', 'ftp'].flatMap((scheme) => [
      [`${scheme}_proxy`, options.proxyUrl],
      [`${scheme.toUpperCase()}_PROXY`, options.proxyUrl],
    ]),
  );
  const run = await runConfined(ytdlp.path, args, {
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes ?? MAX_OUTPUT_BYTES,
    signal: options.signal,
    env: proxies,
    ended: options.revoke,
  });
  if (run.exitCode !== 0) throw failure(run.stderr, options);
  return run.stdout;
}

function describe(stdout: Buffer): unknown {
  try {
    return JSON.parse(stdout.toString('utf8'));
  } catch {
    throw new DownloadError('unsupported_source', 'yt-dlp did not answer with a description of the page.');
  }
}

/** yt-dlp's JSON as the service reads it: one video, with something to fetch, not live. */
export function siteInfoOf(json: unknown): SiteInfo {
  const info = firstVideo(json);
  if (!info) throw new DownloadError('unsupported_source', 'yt-dlp found no video on the page.');
  if (info.is_live === true || info.live_status === 'is_live' || info.live_status === 'is_upcoming')
    throw new DownloadError('unsupported_source', 'The page is a live stream; live streams are not downloaded.');
  if (!info.formats?.length && !info.url) throw new DownloadError('unsupported_source', 'yt-dlp found no format to download on the page.');
  return info;
}

/** The video itself, or for a playlist (a feed, a page of several embeds) its first video, under the playlist's extractor if it names none. */
function firstVideo(json: unknown): SiteInfo | null {
  const playlist = playlistSchema.safeParse(json);
  if (!playlist.success) {
    const video = infoSchema.safeParse(json);
    return video.success ? video.data : null;
  }
  for (const entry of playlist.data.entries ?? []) {
    const video = infoSchema.safeParse(entry);
    if (!video.success || video.data._type === 'playlist') continue;
    const { extractor_key, extractor, title } = playlist.data;
    return {
      ...video.data,
      extractor_key: video.data.extractor_key ?? extractor_key,
      extractor: video.data.extractor ?? extractor,
      title: video.data.title ?? title,
    };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// What a failure means. The first rule whose pattern is in yt-dlp's ERROR line decides; the lines
// these were written against are in test/site-errors.test.ts. The proxy answers 403 to what the
// address policy refuses: for https that is "Tunnel connection failed: 403", for plain http an
// "HTTP Error 403" like a site's own, which only the proxy's record (`refusedHosts`) tells apart.

type Rule = { pattern: RegExp; code: ErrorCode; retryable: boolean; summary: string };

const RULES: Rule[] = [
  // First, because these lines end with the URL, which may say anything.
  {
    pattern: /^ERROR: (?:Unsupported URL|No suitable extractor)|is not a valid URL/,
    code: 'unsupported_source',
    retryable: false,
    summary: 'yt-dlp found no video there',
  },
  { pattern: /\bDRM[ -]protected\b|\bprotected by DRM\b/i, code: 'drm_protected', retryable: false, summary: 'The video is DRM-protected' },
  { pattern: /Tunnel connection failed: 403\b/, code: 'blocked_address', retryable: false, summary: 'The page led to an address the server may not reach' },
  {
    pattern: /Tunnel connection failed: (?:407|429)\b|HTTP Error 407\b/,
    code: 'internal_error',
    retryable: true,
    summary: "The server's proxy refused yt-dlp",
  },
  { pattern: /Tunnel connection failed: 5\d\d\b/, code: 'source_unreachable', retryable: true, summary: 'The site could not be reached' },
  { pattern: /HTTP Error 5\d\d\b/, code: 'source_http_error', retryable: true, summary: 'The site answered with an error' },
  { pattern: /HTTP Error 4\d\d\b/, code: 'source_http_error', retryable: false, summary: 'The site answered with an error' },
  { pattern: /timed out/i, code: 'source_timeout', retryable: true, summary: 'The site was too slow' },
  { pattern: /CERTIFICATE_VERIFY_FAILED|\bSSL\b/, code: 'source_unreachable', retryable: false, summary: 'The TLS connection to the site failed' },
  {
    pattern:
      /Connection (?:refused|reset|aborted)|Remote end closed|Name or service not known|name resolution|No route to host|Network is unreachable|urlopen error/i,
    code: 'source_unreachable',
    retryable: true,
    summary: 'The site could not be reached',
  },
];

const OTHERWISE: Rule = { pattern: /$/, code: 'unsupported_source', retryable: false, summary: 'yt-dlp could not extract a video' };

function failure(stderr: string, options: ExtractOptions): DownloadError {
  const line = errorLine(stderr);
  const reason = shortReason(line, proxySecrets(options.proxyUrl));
  const exceeded = options.exceeded?.();
  if (exceeded) return new DownloadError('source_too_large', `The page made yt-dlp read more than the server allows one extraction (${exceeded}).`);
  const refused = options.refusedHosts?.() ?? [];
  if (refused.length > 0)
    return new DownloadError('blocked_address', `The page led to an address the server may not reach (${shortReason(refused.join(', '), [])}).`);
  const rule = RULES.find((candidate) => candidate.pattern.test(line)) ?? OTHERWISE;
  return new DownloadError(rule.code, reason ? `${rule.summary}: ${reason}` : `${rule.summary}.`, rule.retryable);
}

/** The first `ERROR:` line of yt-dlp's stderr (else its last line), without escape sequences or control characters. */
function errorLine(stderr: string): string {
  const lines = withoutControls(stderr.replace(ANSI, ''))
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return lines.find((line) => line.startsWith('ERROR:')) ?? lines.at(-1) ?? '';
}

// CSI sequences (colours), then any other two-byte escape.
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]?/g;

/** At most REASON_LENGTH characters of what went wrong, with yt-dlp's boilerplate and every form of the proxy's URL and credential removed. */
function shortReason(line: string, secrets: string[]): string {
  let reason = line
    .replace(/^ERROR:\s*/, '')
    .replace(/;\s*please report this issue on\b.*$/i, '')
    .replace(/\s*\(caused by .*$/, '');
  for (const secret of secrets) reason = redact(reason, secret);
  // One past the bound, to know whether it was cut.
  const chars = Array.from(oneLine(reason, REASON_LENGTH + 1));
  return chars.length > REASON_LENGTH ? `${chars.slice(0, REASON_LENGTH - 1).join('')}…` : chars.join('');
}

/** `text` with each `secret` replaced, except where its digits go on (the port 8080 is not in 80800). */
function redact(text: string, secret: string): string {
  let result = '';
  let from = 0;
  let at = text.indexOf(secret);
  while (at !== -1) {
    const end = at + secret.length;
    const longer = /\d$/.test(secret) && /^\d/.test(text.slice(end, end + 1));
    result += text.slice(from, at) + (longer ? secret : '[proxy]');
    from = end;
    at = text.indexOf(secret, from);
  }
  return result + text.slice(from);
}

/** The proxy URL as yt-dlp or Python could print it: whole, without its credential, and the credential in every encoding; longest first. */
function proxySecrets(proxyUrl: string): string[] {
  const secrets = [proxyUrl];
  try {
    const url = new URL(proxyUrl);
    const { username, password } = url;
    const decoded = [decodeURIComponent(username), decodeURIComponent(password)];
    secrets.push(url.host, `${url.protocol}//${url.host}`, username, password, ...decoded);
    if (password) secrets.push(Buffer.from(`${decoded[0]}:${decoded[1]}`).toString('base64'));
  } catch {
    // Not a URL: only its exact text can be looked for.
  }
  return [...new Set(secrets.filter((secret) => secret.length >= 4))].sort((a, b) => b.length - a.length);
}

// ---------------------------------------------------------------------------------------------
// Running it.

type Limits = {
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  env?: Record<string, string>;
  /** Called as the run is stopped (before the kill) and as its process exits (before its output is all read). */
  ended?: () => void;
};
type Run = { exitCode: number | null; stdout: Buffer; stderr: string };

/** Every run not yet over, to be killed at shutdown. */
const running = new Set<{ stop(reason: unknown): void; closed: Promise<void> }>();

/** Kills every yt-dlp still running (shutdown); their extractions reject as retryable. Resolves once they are gone. */
export async function killAllExtractions(): Promise<void> {
  const runs = [...running];
  for (const run of runs) run.stop(new DownloadError('internal_error', 'The server stopped while yt-dlp was running.', true));
  await Promise.all(runs.map((run) => run.closed));
}

/** How many yt-dlp runs are going on (for tests and metrics). */
export function runningExtractions(): number {
  return running.size;
}

/** util-linux's prlimit, when the machine has it, to hold each run to MAX_ADDRESS_SPACE_BYTES. */
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((candidate) => existsSync(candidate));

/** The command as run: under prlimit's bound on its memory where there is one (it execs the command: same process, same group). */
function boundedCommand(file: string, args: string[]): { file: string; args: string[] } {
  return PRLIMIT ? { file: PRLIMIT, args: [`--as=${MAX_ADDRESS_SPACE_BYTES}`, '--', file, ...args] } : { file, args };
}

// A run's HOME is named for the process that made it, so that a start can tell those a killed
// process left (a `kill -9` removes nothing) from a live process's, and from anyone else's.
const HOME_PREFIX = 'vds-ytdlp-home-';
const LEFT_HOME = new RegExp(`^${HOME_PREFIX}(\\d{1,10})-[A-Za-z0-9]{6}$`);

/** Removes the HOMEs of runs whose process is gone: only folders by that name, of this user, whose process does not exist. */
export async function removeLeftoverHomes(): Promise<void> {
  const dir = os.tmpdir();
  const names = await readdir(dir).catch(() => []);
  await Promise.all(
    names.map(async (name) => {
      const pid = LEFT_HOME.exec(name)?.[1];
      if (!pid || processExists(Number(pid))) return;
      const folder = path.join(dir, name);
      const stats = await lstat(folder).catch(() => null);
      if (!stats?.isDirectory() || stats.uid !== process.getuid?.()) return;
      await rm(folder, { recursive: true, force: true }).catch(() => {});
    }),
  );
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // Another user's process is there all the same.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function runConfined(file: string, args: string[], limits: Limits): Promise<Run> {
  limits.signal?.throwIfAborted();
  const home = await mkdtemp(path.join(os.tmpdir(), `${HOME_PREFIX}${process.pid}-`));
  try {
    return await runIn(home, file, args, limits);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

function runIn(home: string, file: string, args: string[], limits: Limits): Promise<Run> {
  const { signal } = limits;
  return new Promise<Run>((resolve, reject) => {
    signal?.throwIfAborted();
    // A process group of its own, so that a kill takes whatever yt-dlp started too.
    const bounded = boundedCommand(file, args);
    const child = spawn(bounded.file, bounded.args, {
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', ...limits.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: false,
      detached: true,
    });
    let closed = false;
    let stoppedBy: unknown;
    let markClosed!: () => void;
    const entry = {
      closed: new Promise<void>((resolve) => (markClosed = resolve)),
      stop(reason: unknown) {
        stoppedBy ??= reason;
        limits.ended?.();
        killGroup();
      },
    };
    const killGroup = () => {
      if (closed || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // the group is gone already; the leader may not be
      }
    };
    running.add(entry);
    const onAbort = () => entry.stop(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => entry.stop(new DownloadError('source_timeout', `yt-dlp did not finish within ${Math.round(limits.timeoutMs / 1000)} s.`, true)),
      limits.timeoutMs,
    );

    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > limits.maxOutputBytes)
        return entry.stop(new DownloadError('source_too_large', `yt-dlp's description of the page passed the limit of ${limits.maxOutputBytes} bytes.`));
      stdout.push(chunk);
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });

    // The process is gone once it exits, though 'close' waits for whatever still holds its output
    // (a process it left behind): what it was given ends with it, what it left in its group is
    // killed, and one that holds its output from a session of its own is not waited for long.
    child.on('exit', () => {
      limits.ended?.();
      killGroup();
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, OUTPUT_AFTER_EXIT_MS).unref();
    });
    const finish = () => {
      closed = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      running.delete(entry);
      markClosed();
    };
    child.on('error', (error) => {
      finish();
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort's reason goes on as it came, for the caller to recognise.
      reject(stoppedBy ?? error);
    });
    child.on('close', (exitCode) => {
      finish();
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- as above.
      if (stoppedBy !== undefined) reject(stoppedBy);
      else resolve({ exitCode, stdout: Buffer.concat(stdout), stderr });
    });
  });
}
