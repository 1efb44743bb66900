import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileWriter } from '../src/files/file-writer.ts';

// The writer every piece of a direct file goes through. A source that fails mid-body must lose only
// the bytes that never arrived: those handed to the writer and still queued behind a slow write are
// written and recorded all the same, but not taken as the piece's end (an S3 part-writer would
// upload a short last part).

let dir: string;
let count = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'file-writer-'));
});

afterAll(() => rm(dir, { recursive: true, force: true }));

/** A writer into a new file that already holds `before`, each write 20 ms slow, noting the spans it wrote and whether it ended. */
async function slowWriter(before: Buffer) {
  const file = path.join(dir, `${++count}.part`);
  await writeFile(file, before);
  const spans: Array<[number, number]> = [];
  const events: string[] = [];
  const writer = fileWriter(file, before.length, {
    written: async (from, to) => {
      spans.push([from, to]);
      await sleep(20);
    },
    ended: (end) => void events.push(`ended at ${end}`),
    closed: () => void events.push('closed'),
  });
  return { file, writer, spans, events };
}

const chunks = Array.from({ length: 6 }, () => randomBytes(300 * 1024));
const before = randomBytes(1000);

/**
 * Hands the writer the first chunk, and the rest once the first is on its way (until the file is
 * open, every write would go as one): once it is in the file, its slow hook holds the writer.
 * Watched, not waited for by the clock, which a loaded machine outruns.
 */
async function handOver(writer: NodeJS.WritableStream, file: string): Promise<void> {
  writer.write(chunks[0]!);
  while ((await stat(file)).size < before.length + chunks[0]!.length) await sleep(1);
  for (const chunk of chunks.slice(1)) writer.write(chunk);
}

test('when a writer is cut short while writes queue behind a slow one, then every byte it was handed is in the file and recorded, and it is not taken as ended', async () => {
  const { file, writer, spans, events } = await slowWriter(before);
  await handOver(writer, file);
  writer.cutShort();
  await once(writer, 'close');
  const total = before.length + chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  expect({ file: (await readFile(file)).equals(Buffer.concat([before, ...chunks])), last: spans.at(-1)?.[1], events }).toEqual({
    file: true,
    last: total,
    events: ['closed'],
  });
});

test('when a writer is ended, then its bytes are written and it is taken as ended where they end', async () => {
  const { file, writer, events } = await slowWriter(before);
  for (const chunk of chunks) writer.write(chunk);
  writer.end();
  await once(writer, 'close');
  const whole = Buffer.concat([before, ...chunks]);
  expect({ file: (await readFile(file)).equals(whole), events }).toEqual({ file: true, events: [`ended at ${whole.length}`, 'closed'] });
});

test('when a writer is destroyed (a cancel) while writes queue, then it stops after the write on its way, and is not taken as ended', async () => {
  const { file, writer, events } = await slowWriter(before);
  writer.on('error', () => {});
  await handOver(writer, file);
  const closed = new Promise((resolve) => writer.once('close', resolve));
  writer.destroy(new Error('cancelled'));
  await closed;
  expect({ length: (await readFile(file)).length, events }).toEqual({ length: before.length + chunks[0]!.length, events: ['closed'] });
});
