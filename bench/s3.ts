import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import getPort from 'get-port';
import { startServer, type Server } from './processes.ts';

// The S3-compatible store that STORAGE=s3 is measured against: npm s3rver, through its own command
// line, in a process of its own (so that its CPU is not the bench's), with one bucket, its objects
// as files in a directory of the run. Its work is part of what the S3 rows measure.

const BUCKET = 'downloads';
/** s3rver's own keys; the service finds them in the environment, as the AWS SDK's default chain does. */
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export type S3Server = Server & {
  /** The settings of a service that keeps its files in this server's bucket. */
  env(retrieval: 'stream' | 'redirect'): Record<string, string>;
};

const packageDir = path.dirname(createRequire(import.meta.url).resolve('s3rver/package.json'));

export const s3rverVersion = (): string => (JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;

/** What the rows named `name` (the service on this server) measure, for the table's notes. */
export function s3Note(name: string): string {
  return [
    `${name}: the service with its files in a bucket of s3rver ${s3rverVersion()} (npm), an S3-compatible server in a Node process of its own on the same cores and disk,`,
    'streamed from the bucket by the service (S3_RETRIEVAL=stream) unless the row says redirect (a 302 to a presigned GET, followed by the client).',
    "s3rver's own work is part of the S3 path: it writes each part to disk with its MD5, copies all the parts into the object (another MD5) when the upload completes,",
    'and reads every GET from its files. No target is set for these rows; the local rows beside them, measured in the same turns, are the comparison.',
  ].join(' ');
}

export async function startS3rver(dir: string): Promise<S3Server> {
  const objects = path.join(dir, 'objects');
  await mkdir(objects, { recursive: true });
  const port = await getPort({ host: '127.0.0.1' });
  // It creates the bucket before it listens: it is there once the port accepts connections.
  const args = ['-d', objects, '-a', '127.0.0.1', '-p', String(port), '--silent', '--configure-bucket', BUCKET];
  const server = await startServer(process.execPath, [path.join(packageDir, 'bin/s3rver.js'), ...args], { log: path.join(dir, 's3rver.log'), port });
  return {
    ...server,
    env: (retrieval) => ({
      ...CREDENTIALS,
      STORAGE: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: server.url,
      S3_FORCE_PATH_STYLE: 'true',
      S3_REGION: 'us-east-1',
      S3_RETRIEVAL: retrieval,
    }),
  };
}
