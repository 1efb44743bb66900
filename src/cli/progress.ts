import { Presets, SingleBar } from 'cli-progress';
import { formatBytes as bytes, formatDuration as seconds, type Collection, type Download } from '../client/index.ts';

/** Tells the person at the other end how a download goes. */
export type Progress = {
  /** A state of the download, as the event stream sends it. */
  download(download: Download): void;
  /** Bytes of the file written to disk so far. */
  saving(received: number, total: number): void;
  /** Done with the bar: what follows is plain lines. */
  end(): void;
};

/**
 * On a terminal, a bar with bytes, speed and ETA that redraws in place. Anywhere else (a pipe, a
 * log file, CI), one plain line per change of state, with no control character, so that the
 * output reads the same in a log as it did live.
 */
export function progressFor(stream: NodeJS.WriteStream): Progress {
  return stream.isTTY ? terminalProgress(stream) : lineProgress(stream);
}

function lineProgress(stream: NodeJS.WriteStream): Progress {
  let last: string | undefined;
  let savingStarted = false;
  return {
    download({ status, error }) {
      if (status === last) return;
      last = status;
      stream.write(`${status}${error ? `: ${error.code}` : ''}\n`);
    },
    saving(_received, total) {
      if (savingStarted) return;
      savingStarted = true;
      stream.write(`saving ${bytes(total)}\n`);
    },
    end() {},
  };
}

/** The bar is for bytes that flow (downloading, saving); queued and processing are lines, as when piped. */
function terminalProgress(stream: NodeJS.WriteStream): Progress {
  const lines = lineProgress(stream);
  const bar = new SingleBar(
    { stream, format: '{phase} [{bar}] {percent} | {done} of {size} | {speed} | ETA {left}', hideCursor: true, barsize: 30, clearOnComplete: false },
    Presets.shades_classic,
  );
  let phase: string | undefined;
  let started = false;
  const show = (name: string, value: number, total: number, payload: { speed: string; left: string }) => {
    const tokens = {
      phase: name.padEnd(11),
      // Without a total (a stream with no Content-Length) a percentage would be made up.
      percent: total ? `${Math.min(100, Math.floor((value / total) * 100))}%` : '?',
      done: bytes(value),
      size: total ? bytes(total) : '?',
      ...payload,
    };
    if (!started || phase !== name) {
      if (started) bar.stop();
      bar.start(Math.max(total, 1), value, tokens);
      started = true;
      phase = name;
    }
    bar.setTotal(Math.max(total, value, 1));
    bar.update(value, tokens);
  };
  const end = () => {
    if (started) bar.stop();
    started = false;
  };
  let savingSince = 0;
  return {
    download(download) {
      const { status, progress } = download;
      if (status !== 'downloading') {
        end();
        lines.download(download);
        return;
      }
      const speed = progress.speed_bytes_per_second ? `${bytes(progress.speed_bytes_per_second)}/s` : '-';
      const left = progress.eta_seconds !== null ? seconds(progress.eta_seconds) : '-';
      show(status, progress.downloaded_bytes, progress.total_bytes ?? 0, { speed, left });
    },
    saving(received, total) {
      savingSince ||= Date.now();
      const elapsed = (Date.now() - savingSince) / 1000;
      const rate = elapsed > 0.2 ? received / elapsed : 0;
      show('saving', received, total, { speed: rate ? `${bytes(rate)}/s` : '-', left: rate ? seconds((total - received) / rate) : '-' });
    },
    end,
  };
}

/** Tells the person how a whole collection goes: one line for all its entries. */
export type CollectionProgress = {
  /** The collection as the event stream sends it (its status and counts). */
  collection(collection: Collection): void;
  /** Entries settled here (saved, or ended without a file) and bytes saved so far, over every entry. */
  settled(done: number, savedBytes: number): void;
  end(): void;
};

/**
 * One overall line, never one per entry: on a terminal a bar of entries done out of the total with
 * the bytes saved, redrawn in place; anywhere else a plain line each time another entry is done.
 */
export function collectionProgressFor(stream: NodeJS.WriteStream): CollectionProgress {
  let total = 0;
  let done = 0;
  let savedBytes = 0;
  let expanding = false;
  if (!stream.isTTY) {
    let said = -1;
    return {
      collection(collection) {
        total = collection.counts.total;
        if (collection.status === 'expanding' && !expanding) stream.write('expanding\n');
        expanding ||= collection.status === 'expanding';
      },
      settled(entries, bytesSaved) {
        if (entries === said) return;
        said = entries;
        stream.write(`${entries}/${total} done, ${bytes(bytesSaved)} saved\n`);
      },
      end() {},
    };
  }
  const bar = new SingleBar(
    { stream, format: '{phase} [{bar}] {value}/{total} entries | {saved} saved', hideCursor: true, barsize: 30, clearOnComplete: false },
    Presets.shades_classic,
  );
  let started = false;
  const draw = (phase: string) => {
    const tokens = { phase: phase.padEnd(11), saved: bytes(savedBytes) };
    if (!started) bar.start(Math.max(total, 1), done, tokens);
    started = true;
    bar.setTotal(Math.max(total, done, 1));
    bar.update(done, tokens);
  };
  return {
    collection(collection) {
      total = collection.counts.total;
      draw(collection.status);
    },
    settled(entries, bytesSaved) {
      [done, savedBytes] = [entries, bytesSaved];
      draw(done < total ? 'running' : 'saved');
    },
    end() {
      if (started) bar.stop();
      started = false;
    },
  };
}
