import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import vm from 'node:vm';
import fc from 'fast-check';
import { DownloadError } from '../src/core/errors.ts';
import { WorkFolders } from '../src/files/work-folders.ts';
import { contentLength, requireStatus, requireWholeBody, SourceHttp, transportError, type SourceResponse } from '../src/net/guarded-client.ts';
import { peek } from '../src/net/peek.ts';
import { fetchDirect } from '../src/sources/direct/index.ts';
import type { SourceContext } from '../src/sources/types.ts';
import { LocalTransfers } from '../src/storage/local/local-transfers.ts';

// A source is a raw TCP server whose every move is drawn at random: the body's size and framing,
// how it is cut into writes and how long it waits between them, and where and how the connection
// ends (a clean close, a reset, a half-close, a destroy; before the headers, inside them, inside
// the body, or right after it). The reader is drawn too: at once, after a pause (as the service
// does while it decides what a URL is), or slowly. Whatever happens, nothing is thrown past the
// client (undici 7 asserted from a socket listener on a close while the body was paused, which
// ends a real process), a complete body is read whole, and an incomplete one never passes as
// complete: reading it fails, or its declared length does, as a code of the contract.
//
// A reset is not a clean end: what the source's kernel had not sent yet is dropped, and so may be
// what the reader's kernel had not handed over. After a body its framing delimits (a
// Content-Length, a last chunk) a reset may cost the body (a retryable source_unreachable) but
// never let a shorter one pass; a body that only the close delimits may pass cut short by a reset
// (see closeDelimitedBody), but only ever as the bytes the source sent, from the first.

const RUNS = 150;
const DIRECT_RUNS = 60;
const KIB = 1024;
/** The client's idle timeout: a run that outlives it by a second has hung. */
const IDLE_TIMEOUT_MS = 2_000;
const RUN_DEADLINE_MS = IDLE_TIMEOUT_MS + 1_000;
/** What a broken connection may fail as, once transportError has classified it. */
const TRANSPORT_CODES = ['source_unreachable', 'source_http_error', 'source_timeout'];

type Framing = 'length' | 'length-over' | 'close' | 'chunked' | 'chunked-unterminated' | 'http1.0-length' | 'http1.0-close';
type Cut = { at: 'before-headers' } | { at: 'mid-headers' | 'mid-body'; perMille: number } | { at: 'after-body' };
type Ending = 'end' | 'half-close' | 'reset' | 'destroy';
type Reader = { mode: 'at-once' } | { mode: 'paused' | 'peeked'; ms: number } | { mode: 'slow'; msPerChunk: number };

type Scenario = {
  size: number;
  seed: number;
  framing: Framing;
  /** HTTP/1.1 framings only: the response says Connection: close (undici 7's assertion needs a connection that ends with its response). */
  connectionClose: boolean;
  /** For length-over: how many declared bytes never come. */
  missing: number;
  chunkSize: number;
  cut: Cut;
  /** Where the bytes are split into writes (per mille of what is written), and the wait after each. */
  writes: { perMille: number; delayMs: number }[];
  headersApart: boolean;
  endDelayMs: number;
  ending: Ending;
};

/** What a correct client must make of a scenario. */
type Expected =
  | { kind: 'complete'; body: Buffer }
  /**
   * Every byte of the body as its framing delimits it was written, then the connection was reset:
   * the body whole, or a retryable source_unreachable. `mayBeCut`: nothing delimits the body but
   * the close, so any first part of it may pass as well (see closeDelimitedBody).
   */
  | { kind: 'reset-after-body'; body: Buffer; mayBeCut: boolean }
  | { kind: 'incomplete' };

type Plan = { pieces: { bytes: Buffer; delayMs: number }[]; expected: Expected };

type Outcome = { kind: 'accepted'; bytes: Buffer } | { kind: 'rejected'; error: unknown } | { kind: 'hung' };

/** Small bodies, bodies across the 64 KiB and 128 KiB marks where stream buffers fill up, and between them. */
const bodySize = fc.oneof(
  fc.constantFrom(0, 1, 1023, 1024, 1025),
  fc.integer({ min: -64, max: 64 }).map((delta) => 64 * KIB + delta),
  fc.integer({ min: 64 * KIB, max: 128 * KIB }),
  fc.integer({ min: -64, max: 64 }).map((delta) => 128 * KIB + delta),
  fc.integer({ min: 0, max: 300 * KIB }),
);

const cut: fc.Arbitrary<Cut> = fc.oneof(
  fc.constant({ at: 'before-headers' as const }),
  fc.record({ at: fc.constant('mid-headers' as const), perMille: fc.integer({ min: 0, max: 999 }) }),
  fc.record({ at: fc.constant('mid-body' as const), perMille: fc.integer({ min: 0, max: 999 }) }),
  fc.constant({ at: 'after-body' as const }),
);

const scenario: fc.Arbitrary<Scenario> = fc.record({
  size: bodySize,
  seed: fc.nat(),
  framing: fc.constantFrom<Framing>('length', 'length-over', 'close', 'chunked', 'chunked-unterminated', 'http1.0-length', 'http1.0-close'),
  connectionClose: fc.boolean(),
  missing: fc.integer({ min: 1, max: 100_000 }),
  chunkSize: fc.constantFrom(1000, 4096, 16 * KIB, 64 * KIB, 1024 * KIB),
  cut,
  writes: fc.array(fc.record({ perMille: fc.integer({ min: 0, max: 1000 }), delayMs: fc.constantFrom(0, 0, 1, 5, 20) }), { maxLength: 6 }),
  headersApart: fc.boolean(),
  endDelayMs: fc.constantFrom(0, 0, 1, 10, 50),
  ending: fc.constantFrom<Ending>('end', 'half-close', 'reset', 'destroy'),
});

/** Mostly a reader that holds the body a while, as the service does while it decides what a URL is. */
const reader: fc.Arbitrary<Reader> = fc.oneof(
  { arbitrary: fc.constant({ mode: 'at-once' as const }), weight: 1 },
  { arbitrary: fc.record({ mode: fc.constantFrom('paused' as const, 'peeked' as const), ms: fc.integer({ min: 0, max: 150 }) }), weight: 2 },
  { arbitrary: fc.record({ mode: fc.constant('slow' as const), msPerChunk: fc.integer({ min: 1, max: 5 }) }), weight: 1 },
);

/** Bytes that differ from position to position, so that a lost or repeated piece shows. */
function bodyOf(size: number, seed: number): Buffer {
  const body = Buffer.allocUnsafe(size);
  let state = seed | 1;
  for (let at = 0; at < size; at++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    body[at] = state >>> 24;
  }
  return body;
}

function headOf(s: Scenario): string {
  const http10 = s.framing.startsWith('http1.0');
  const lines = [`HTTP/${http10 ? '1.0' : '1.1'} 200 OK`, 'Content-Type: application/octet-stream'];
  if (s.framing === 'length' || s.framing === 'http1.0-length') lines.push(`Content-Length: ${s.size}`);
  if (s.framing === 'length-over') lines.push(`Content-Length: ${s.size + s.missing}`);
  if (s.framing === 'chunked' || s.framing === 'chunked-unterminated') lines.push('Transfer-Encoding: chunked');
  if (s.framing === 'close' || (!http10 && s.connectionClose)) lines.push('Connection: close');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function chunked(body: Buffer, chunkSize: number, terminated: boolean): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += chunkSize) {
    const piece = body.subarray(at, at + chunkSize);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  if (terminated) parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

const closeDelimited = (framing: Framing) => framing === 'close' || framing === 'http1.0-close';

/**
 * A close-delimited body is whatever came before a clean close. A reset is no clean close, but it
 * cannot always be told from one: the source's kernel drops what it had not yet sent (the reader
 * held the body, the window was full), and when the reset reaches a socket that has just read
 * what did arrive, libuv reports the hang-up as the end of the stream (a short read then POLLHUP
 * is EOF), which Node's client and undici alike take for the end of such a body. So a reset body
 * may pass cut short, but only ever as the bytes sent, in order, from the first.
 */
function closeDelimitedBody(s: Scenario, sent: Buffer): Expected {
  return s.ending === 'reset' ? { kind: 'reset-after-body', body: sent, mayBeCut: true } : { kind: 'complete', body: sent };
}

/** The bytes the source writes, in the writes it makes them in, and what the client must make of them. */
function planOf(s: Scenario): Plan {
  const body = bodyOf(s.size, s.seed);
  const head = Buffer.from(headOf(s), 'latin1');
  const framed = s.framing.startsWith('chunked') ? chunked(body, s.chunkSize, s.framing === 'chunked') : body;
  // A body with no bytes has no middle: cutting it there is cutting it after.
  const cutAt = s.cut.at === 'mid-body' && framed.length === 0 ? ({ at: 'after-body' } as const) : s.cut;
  let written: number;
  let expected: Expected = { kind: 'incomplete' };
  switch (cutAt.at) {
    case 'before-headers':
      written = 0;
      break;
    case 'mid-headers':
      written = 1 + Math.floor((cutAt.perMille / 1000) * (head.length - 1));
      break;
    case 'mid-body':
      written = head.length + Math.floor((cutAt.perMille / 1000) * framed.length);
      if (closeDelimited(s.framing)) expected = closeDelimitedBody(s, body.subarray(0, written - head.length));
      break;
    case 'after-body':
      written = head.length + framed.length;
      if (closeDelimited(s.framing)) expected = closeDelimitedBody(s, body);
      else if (s.framing !== 'length-over' && s.framing !== 'chunked-unterminated') {
        expected = s.ending === 'reset' ? { kind: 'reset-after-body', body, mayBeCut: false } : { kind: 'complete', body };
      }
      break;
  }
  const stream = Buffer.concat([head, framed]).subarray(0, written);
  const splits = new Map<number, number>();
  for (const write of s.writes) splits.set(Math.round((write.perMille / 1000) * stream.length), write.delayMs);
  if (s.headersApart) splits.set(head.length, splits.get(head.length) ?? 0);
  const ends = [...splits.keys()].filter((at) => at > 0 && at < stream.length).sort((a, b) => a - b);
  const pieces: Plan['pieces'] = [];
  let from = 0;
  for (const end of [...ends, stream.length]) {
    if (end > from) pieces.push({ bytes: stream.subarray(from, end), delayMs: splits.get(end) ?? 0 });
    from = end;
  }
  return { pieces, expected };
}

/** What was thrown past every handler (recorded instead of ending the process, or the test). */
const crashes: string[] = [];
const crashesThisRun: string[] = [];
const record = (kind: string) => (error: unknown) => {
  const text = `${kind}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
  crashes.push(text);
  crashesThisRun.push(text);
};
const onUncaught = record('uncaughtException');
const onUnhandled = record('unhandledRejection');
// Jest gives a test a copy of `process`, whose events never fire: the process's own is the one
// of the outer context, where a socket listener's throw lands.
const realProcess = vm.runInThisContext('process') as NodeJS.Process;
let jestListeners: { uncaughtException: NodeJS.UncaughtExceptionListener[]; unhandledRejection: NodeJS.UnhandledRejectionListener[] };

beforeAll(() => {
  jestListeners = { uncaughtException: realProcess.listeners('uncaughtException'), unhandledRejection: realProcess.listeners('unhandledRejection') };
  realProcess.removeAllListeners('uncaughtException').removeAllListeners('unhandledRejection');
  realProcess.on('uncaughtException', onUncaught).on('unhandledRejection', onUnhandled);
});

afterAll(() => {
  realProcess.off('uncaughtException', onUncaught).off('unhandledRejection', onUnhandled);
  for (const listener of jestListeners.uncaughtException) realProcess.on('uncaughtException', listener);
  for (const listener of jestListeners.unhandledRejection) realProcess.on('unhandledRejection', listener);
  expect(crashes).toEqual([]);
});

type Source = { url: string; done: Promise<void>; close(): Promise<void> };

/** A server that answers its first request as the plan says, and only that one. */
async function serve(s: Scenario, plan: Plan): Promise<Source> {
  const sockets = new Set<net.Socket>();
  let finish = () => {};
  const done = new Promise<void>((resolve) => (finish = resolve));
  let answered = false;
  const answer = async (socket: net.Socket) => {
    for (const piece of plan.pieces) {
      // Each write handed to the kernel before the next step: a destroy or a reset drops what is not.
      const error = await new Promise<Error | null | undefined>((resolve) => socket.write(piece.bytes, resolve));
      if (error || socket.destroyed) return;
      if (piece.delayMs > 0) await sleep(piece.delayMs);
    }
    if (s.endDelayMs > 0) await sleep(s.endDelayMs);
    if (socket.destroyed) return;
    switch (s.ending) {
      case 'end':
      case 'half-close':
        socket.end();
        break;
      case 'reset':
        socket.resetAndDestroy();
        break;
      case 'destroy':
        socket.destroy();
        break;
    }
  };
  // half-close: the source sends its FIN and keeps its side open, reading, until the run is over.
  const server = net.createServer({ allowHalfOpen: s.ending === 'half-close' }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => {}).on('close', () => sockets.delete(socket));
    let request = '';
    socket.on('data', (data) => {
      request += data.toString('latin1');
      if (answered || !request.includes('\r\n\r\n')) return;
      answered = true;
      void answer(socket).finally(finish);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/file.bin`,
    done,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function sourceHttp(): SourceHttp {
  return new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: IDLE_TIMEOUT_MS, idleTimeoutMs: IDLE_TIMEOUT_MS, minBytesPerSecond: 0 });
}

/** Reads the body as the reader says; every failure through transportError, as the service's readers do. */
async function readAll(http: SourceHttp, url: string, how: Reader): Promise<Outcome> {
  let response: SourceResponse;
  try {
    response = requireStatus(await http.get(url));
  } catch (error) {
    return { kind: 'rejected', error: transportError(error) };
  }
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    let body = response.body;
    if (how.mode === 'peeked') body = (await peek(body, 1024, response.floor)).body;
    if (how.mode === 'paused' || how.mode === 'peeked') await sleep(how.ms);
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      received += (chunk as Buffer).length;
      if (how.mode === 'slow') await sleep(how.msPerChunk);
    }
    requireWholeBody(response, received, contentLength(response));
  } catch (error) {
    return { kind: 'rejected', error: transportError(error) };
  }
  return { kind: 'accepted', bytes: Buffer.concat(chunks) };
}

function described(error: unknown): string {
  if (error instanceof DownloadError) return `DownloadError ${error.code}${error.retryable ? ' (retryable)' : ''}: ${error.message}`;
  const raw = error as { name?: string; code?: string; message?: string } | null;
  return `raw ${raw?.name ?? typeof error} ${raw?.code ?? ''}: ${raw?.message ?? String(error)}`;
}

/** What is wrong with the outcome for what was expected; nothing when it is right. */
function problemsOf(expected: Expected, outcome: Outcome): string[] {
  if (outcome.kind === 'hung') return [`the read neither ended nor failed within ${RUN_DEADLINE_MS} ms`];
  if (outcome.kind === 'rejected') {
    const error = outcome.error;
    if (!(error instanceof DownloadError) || !TRANSPORT_CODES.includes(error.code)) return [`failed with ${described(error)}`];
    if (expected.kind === 'complete') return [`a complete body of ${expected.body.length} bytes failed: ${described(error)}`];
    if (expected.kind === 'reset-after-body' && !(error.code === 'source_unreachable' && error.retryable)) {
      return [`a reset after the whole body failed as ${described(error)}, not a retryable source_unreachable`];
    }
    return [];
  }
  if (expected.kind === 'incomplete') return [`an incomplete body passed as complete with ${outcome.bytes.length} bytes`];
  if (expected.kind === 'reset-after-body' && expected.mayBeCut) {
    const prefix = outcome.bytes.length <= expected.body.length && outcome.bytes.equals(expected.body.subarray(0, outcome.bytes.length));
    return prefix ? [] : [`${outcome.bytes.length} bytes passed as complete that are not the first of the ${expected.body.length} sent`];
  }
  if (!outcome.bytes.equals(expected.body)) return [`${outcome.bytes.length} bytes passed as complete, not the ${expected.body.length} sent`];
  return [];
}

/** Resolves when `work` does, or with `fallback` at the deadline or as soon as anything crashed. */
async function bounded<T>(work: Promise<T>, fallback: T): Promise<T> {
  let stop = () => {};
  const stopped = new Promise<T>((resolve) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (crashesThisRun.length > 0 || Date.now() - started > RUN_DEADLINE_MS) resolve(fallback);
    }, 10);
    stop = () => clearInterval(timer);
  });
  try {
    return await Promise.race([work, stopped]);
  } finally {
    stop();
  }
}

/** One scenario against a fresh source and a fresh client: the problems found, crashes first. */
async function runOnce(s: Scenario, attempt: (http: SourceHttp, url: string, plan: Plan) => Promise<string[]>): Promise<string[]> {
  crashesThisRun.length = 0;
  const plan = planOf(s);
  const source = await serve(s, plan);
  const http = sourceHttp();
  try {
    const problems = await bounded(attempt(http, source.url, plan), [`the read neither ended nor failed within ${RUN_DEADLINE_MS} ms`]);
    // Whatever the source still does (a reset after the body was read, say) reaches the client before the run is judged.
    await bounded(source.done, undefined);
    await sleep(20);
    return [...crashesThisRun, ...problems];
  } finally {
    // A client that crashed may never let go of its connection: it gets a moment, not forever.
    await Promise.race([Promise.all([source.close(), http.close()]), sleep(500)]);
  }
}

test('when a source sends any framing in any writes and ends its socket in any way at any offset, then a complete body is read whole, an incomplete one fails with a contract code, and nothing escapes the client', async () => {
  await fc.assert(
    fc.asyncProperty(scenario, reader, async (s, how) => {
      const problems = await runOnce(s, async (http, url, plan) => problemsOf(plan.expected, await readAll(http, url, how)));
      expect(problems).toEqual([]);
    }),
    { numRuns: RUNS },
  );
}, 120_000);

describe('a direct file', () => {
  let dataDir: string;
  let work: WorkFolders;
  let runs = 0;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-source-sockets-'));
    work = new WorkFolders(dataDir);
    await work.init();
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  async function context(http: SourceHttp, url: string): Promise<SourceContext> {
    const id = `run-${(runs += 1)}`;
    const workDir = await work.folder(id);
    return {
      url,
      http,
      workDir,
      transfer: new LocalTransfers().open(id, workDir),
      signal: new AbortController().signal,
      maxFileBytes: 1024 ** 3,
      directConnections: 1,
      validator: null,
      rememberValidator: async () => {},
      progress: () => {},
      processing: async () => {},
      phaseEnded: () => {},
    };
  }

  /** fetchDirect as the service calls it: on a response it has peeked at and held, or on its own request. */
  async function fetchToDisk(http: SourceHttp, url: string, expected: Expected, held: number | null): Promise<string[]> {
    const ctx = await context(http, url);
    let outcome: Outcome;
    try {
      let opened: SourceResponse | undefined;
      if (held !== null) {
        const response = requireStatus(await http.get(url, { signal: ctx.signal }));
        opened = { ...response, body: (await peek(response.body, 1024, response.floor)).body };
        await sleep(held);
      }
      const fetched = await fetchDirect(ctx, opened);
      const onDisk = await readFile(fetched.path);
      const hashed = createHash('sha256').update(onDisk).digest('hex');
      const sha256 = await fetched.sha256();
      if (fetched.sizeBytes !== onDisk.length || sha256 !== hashed) {
        return [`fetchDirect reported ${fetched.sizeBytes} bytes (${sha256}) for a file of ${onDisk.length} (${hashed})`];
      }
      outcome = { kind: 'accepted', bytes: onDisk };
    } catch (error) {
      outcome = { kind: 'rejected', error: transportError(error, ctx.signal) };
    } finally {
      await work.discard(path.basename(ctx.workDir));
    }
    return problemsOf(expected, outcome);
  }

  test('when its source ends the socket in any way at any offset, then the file on disk is the whole body or the attempt fails with a contract code', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, fc.option(fc.integer({ min: 0, max: 150 })), async (s, held) => {
        const problems = await runOnce(s, (http, url, plan) => fetchToDisk(http, url, plan.expected, held));
        expect(problems).toEqual([]);
      }),
      { numRuns: DIRECT_RUNS },
    );
  }, 120_000);
});
