import { createHash, type Hash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import type { HashReply, HashRequest } from './hash-requests.ts';

// The hashing thread: each job reads its file back from the disk (from the page cache, where its
// bytes have just been written) as far as the service says they are whole, so that sha256 and the
// copies of the reads cost the service's event loop nothing. Reads here block only this thread,
// and the requests that queue meanwhile are each a short step forward.

const READ_BYTES = 1024 * 1024;
const buffer = Buffer.allocUnsafe(READ_BYTES);

type Job = { fd: number | null; hash: Hash; hashed: number; failure: string | null };
const jobs = new Map<number, Job>();

function readUpTo(job: Job, end: number): void {
  if (job.failure !== null || job.fd === null) return;
  try {
    while (job.hashed < end) {
      const bytesRead = readSync(job.fd, buffer, 0, Math.min(READ_BYTES, end - job.hashed), job.hashed);
      if (bytesRead === 0) break;
      job.hash.update(buffer.subarray(0, bytesRead));
      job.hashed += bytesRead;
    }
  } catch (error) {
    job.failure = (error as Error).message;
  }
}

function end(id: number, job: Job): void {
  jobs.delete(id);
  if (job.fd !== null) closeSync(job.fd);
}

function reply(message: HashReply): void {
  parentPort!.postMessage(message);
}

parentPort!.on('message', (request: HashRequest) => {
  if (request.op === 'open') {
    const job: Job = { fd: null, hash: createHash('sha256'), hashed: 0, failure: null };
    try {
      job.fd = openSync(request.file, 'r');
    } catch (error) {
      job.failure = (error as Error).message;
    }
    jobs.set(request.id, job);
    return;
  }
  const job = jobs.get(request.id);
  if (!job) return;
  if (request.op === 'upTo') return readUpTo(job, request.end);
  if (request.op === 'drop') return end(request.id, job);
  readUpTo(job, request.size ?? Infinity);
  end(request.id, job);
  if (job.failure !== null) return reply({ id: request.id, failure: job.failure });
  if (request.size !== null && job.hashed !== request.size) {
    return reply({ id: request.id, failure: `only ${job.hashed} of the file's ${request.size} bytes could be read back` });
  }
  reply({ id: request.id, sha256: job.hash.digest('hex') });
});
