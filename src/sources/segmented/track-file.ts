import { readFile, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { parseJson } from '../../core/json.ts';
import { openInPlace, replaceWhole, writeAt } from '../../files/file-writer.ts';

// A track's pieces go straight into the track's file, in play order, as they arrive: a file per
// piece, joined at the end, cost more main-thread time than the fetch itself (opening, renaming,
// closing and reading back hundreds of small files). The piece first in line writes through; the
// ones that finish ahead of it wait in memory for their turn, up to a bound past which their
// responses wait too. Which pieces are in the file is recorded beside it, so that a later attempt
// on this machine, also after a kill -9, fetches only the pieces after them.

/** Bytes of pieces waiting for their turn that a track holds in memory before their responses are made to wait. */
const WAITING_BYTES = 32 * 1024 * 1024;
/** Writes queued per response before it is made to wait for the disk, as file-writer.ts does. */
const QUEUED_BYTES = 1024 * 1024;
/** The record lags the file by at most this long; stopping writes it at once. */
const SAVE_EVERY_MS = 1000;

/** The first `pieces` pieces are in the file, and take up its first `bytes` bytes. */
type Kept = { pieces: number; bytes: number };

type Attempt = {
  index: number;
  /** Bytes not yet handed to the file, in order. */
  chunks: Buffer[];
  waiting: number;
  /** Every byte the attempt took, in the file or not. */
  total: number;
  state: 'open' | 'done' | 'gone';
  /** The callback of a write held back while too much waits in memory. */
  held?: () => void;
};

/** One request's way into the track file: its bytes, then `commit` once they are known to be whole, or `discard`. */
export type PieceSink = { writable: Writable; commit(): void; discard(): void };

export class TrackFile {
  /** The first piece not yet in the file. */
  private next: number;
  /** Where the next piece starts: the bytes of the pieces before it, queued or written. */
  private position: number;
  /** The attempt of the next piece whose bytes go straight into the file, and how many it has sent there. */
  private owner: Attempt | null = null;
  private ownerBytes = 0;
  private readonly live = new Map<number, Set<Attempt>>();
  private readonly finished = new Map<number, Attempt>();
  private waiting = 0;
  private writing: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private savedAt = Date.now();
  private handle: FileHandle | undefined;

  private constructor(
    readonly file: string,
    private readonly count: number,
    handle: FileHandle,
    kept: Kept,
  ) {
    this.handle = handle;
    this.next = kept.pieces;
    this.position = kept.bytes;
  }

  /** Where the record of `file` is kept. */
  static recordOf(file: string): string {
    return `${file}.kept`;
  }

  /** Opens `file` for a track of `count` pieces, keeping what its record says an earlier attempt finished, and nothing after. */
  static async open(file: string, count: number): Promise<TrackFile> {
    // Never truncated before the record is read.
    const handle = await openInPlace(file);
    try {
      const kept = keptOf(parseJson(await readFile(TrackFile.recordOf(file), 'utf8').catch(() => '')), count, (await handle.stat()).size);
      await handle.truncate(kept.bytes);
      return new TrackFile(file, count, handle, kept);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** How many pieces, from the first, an earlier attempt left in the file, and their bytes. */
  get kept(): Kept {
    return { pieces: this.next, bytes: this.position };
  }

  /** A sink for one request for piece `index`; a piece may have several at once (a second request, see hedge.ts). */
  take(index: number): PieceSink {
    const attempt: Attempt = { index, chunks: [], waiting: 0, total: 0, state: 'open' };
    if (index < this.next || this.finished.has(index)) attempt.state = 'gone';
    else {
      let attempts = this.live.get(index);
      if (!attempts) this.live.set(index, (attempts = new Set()));
      attempts.add(attempt);
      if (index === this.next && !this.owner) this.promote(attempt);
    }
    const put = (chunks: Buffer[], done: (error?: Error | null) => void) => this.put(attempt, chunks, done);
    const writable = new Writable({
      highWaterMark: QUEUED_BYTES,
      write: (chunk: Buffer, _encoding, done) => put([chunk], done),
      writev: (chunks, done) =>
        put(
          chunks.map(({ chunk }) => chunk as Buffer),
          done,
        ),
    });
    return { writable, commit: () => this.commit(attempt), discard: () => this.discard(attempt) };
  }

  /** After every piece: the file made exactly the pieces' bytes, and closed. */
  async finish(): Promise<void> {
    await this.settled();
    if (this.next !== this.count) throw new Error(`The track file has ${this.next} of its ${this.count} pieces.`);
    await this.handle!.truncate(this.position);
    await this.close();
  }

  /** Records what is in the file and closes it; what was whole stays for the next attempt. Harmless after `finish`. */
  async close(): Promise<void> {
    if (!this.handle) return;
    await this.writing.catch(() => {});
    const handle = this.handle;
    this.handle = undefined;
    try {
      if (!this.failure) await save(this.file, this.kept);
    } finally {
      await handle.close();
    }
  }

  private put(attempt: Attempt, chunks: Buffer[], done: (error?: Error | null) => void): void {
    const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    if (attempt.state === 'gone') {
      done();
      return;
    }
    attempt.total += bytes;
    if (attempt === this.owner) {
      const at = this.position + this.ownerBytes;
      this.ownerBytes += bytes;
      this.enqueue(chunks, at).then(
        () => done(),
        (error: unknown) => done(error as Error),
      );
      return;
    }
    attempt.chunks.push(...chunks);
    attempt.waiting += bytes;
    this.waiting += bytes;
    if (this.waiting > WAITING_BYTES) attempt.held = () => done();
    else done();
  }

  private commit(attempt: Attempt): void {
    if (attempt.state !== 'open') return;
    attempt.state = 'done';
    // The piece is whole: any other request for it has lost.
    for (const other of this.live.get(attempt.index) ?? []) if (other !== attempt) this.drop(other);
    this.live.delete(attempt.index);
    if (attempt.index !== this.next) {
      this.finished.set(attempt.index, attempt);
      return;
    }
    this.place(attempt);
    for (let waiting = this.finished.get(this.next); waiting; waiting = this.finished.get(this.next)) {
      this.finished.delete(this.next);
      this.place(waiting);
    }
    const [first] = this.live.get(this.next) ?? [];
    if (first) this.promote(first);
    this.release();
    if (Date.now() - this.savedAt >= SAVE_EVERY_MS) {
      this.savedAt = Date.now();
      const kept = this.kept;
      void this.queue(() => save(this.file, kept)).catch(() => {});
    }
  }

  private discard(attempt: Attempt): void {
    if (attempt.state !== 'open') return;
    this.drop(attempt);
    this.live.get(attempt.index)?.delete(attempt);
    if (this.owner === attempt) {
      // What it wrote past the piece's start is written over by the piece's next request.
      this.owner = null;
      this.ownerBytes = 0;
      const [other] = this.live.get(attempt.index) ?? [];
      if (other) this.promote(other);
    }
    this.release();
  }

  /** The next piece, whole: its bytes not yet in the file go after the pieces before it. */
  private place(attempt: Attempt): void {
    const chunks = this.takeWaiting(attempt);
    if (attempt !== this.owner) void this.enqueue(chunks, this.position).catch(() => {});
    this.position += attempt.total;
    this.owner = null;
    this.ownerBytes = 0;
    this.next += 1;
  }

  /** `attempt`, of the next piece, writes straight into the file from now on, starting with what it held. */
  private promote(attempt: Attempt): void {
    this.owner = attempt;
    this.ownerBytes = attempt.waiting;
    void this.enqueue(this.takeWaiting(attempt), this.position).catch(() => {});
    letGo(attempt);
  }

  private drop(attempt: Attempt): void {
    attempt.state = 'gone';
    this.takeWaiting(attempt);
    letGo(attempt);
  }

  /** The bytes `attempt` holds in memory, no longer counted as waiting. */
  private takeWaiting(attempt: Attempt): Buffer[] {
    const chunks = attempt.chunks;
    this.waiting -= attempt.waiting;
    attempt.chunks = [];
    attempt.waiting = 0;
    return chunks;
  }

  /** Lets held responses go on once there is room again. */
  private release(): void {
    if (this.waiting > WAITING_BYTES) return;
    for (const attempts of this.live.values()) {
      for (const attempt of attempts) letGo(attempt);
    }
  }

  /** Writes `chunks` at `position`, after everything queued before. */
  private enqueue(chunks: Buffer[], position: number): Promise<void> {
    if (chunks.length === 0) return this.writing;
    return this.queue(async () => {
      await writeAt(this.handle!, chunks, position);
    });
  }

  /** Runs `work` after everything queued before; once something failed (a full disk), nothing more runs and the finish fails. */
  private queue(work: () => Promise<void>): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (this.failure) throw this.failure.error;
      try {
        await work();
      } catch (error) {
        this.failure ??= { error };
        throw error;
      }
    });
    return this.writing;
  }

  private async settled(): Promise<void> {
    await this.writing.catch(() => {});
    if (this.failure) throw this.failure.error;
  }
}

/** The record, each time whole. */
function save(file: string, kept: Kept): Promise<void> {
  return replaceWhole(TrackFile.recordOf(file), JSON.stringify(kept));
}

/** A record read back: believed only when it is well-formed and the file holds the bytes it names. */
function keptOf(value: unknown, count: number, size: number): Kept {
  const { pieces, bytes } = (value ?? {}) as Partial<Kept>;
  if (!Number.isSafeInteger(pieces) || !Number.isSafeInteger(bytes)) return { pieces: 0, bytes: 0 };
  if (pieces! < 0 || pieces! > count || bytes! < 0 || bytes! > size) return { pieces: 0, bytes: 0 };
  return { pieces: pieces!, bytes: bytes! };
}

/** Lets a response held back while too much waited in memory go on. */
function letGo(attempt: Attempt): void {
  const held = attempt.held;
  attempt.held = undefined;
  held?.();
}
