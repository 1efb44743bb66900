import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DeleteObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { StorageSettings } from '../../src/config/index.ts';

// A real S3-compatible server for the tests (npm s3rver), in this process, on 127.0.0.1, with one
// bucket. s3rver answers AbortMultipartUpload with 405; this server does it, as S3 does, by
// dropping the upload's parts, and passes every other request to s3rver. A test can also have it
// misbehave as a bucket does when it is down: hold requests without an answer, or reset them.

/** s3rver's own keys; the service finds them in the environment, as the AWS SDK's default chain does. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export type S3Server = {
  endpoint: string;
  bucket: string;
  /** STORAGE=s3 settings for this server. */
  settings(overrides?: Partial<Extract<StorageSettings, { kind: 's3' }>>): StorageSettings;
  /** The same, as environment variables for a service process. */
  env(overrides?: Record<string, string>): Record<string, string>;
  /** Removes the object of download `id`, behind the service's back. */
  removeObject(id: string): Promise<void>;
  /** The size of the object of download `id`; null when there is none. */
  objectSize(id: string): Promise<number | null>;
  /** Multipart uploads begun and neither completed nor aborted. */
  pendingUploads(): Promise<string[]>;
  /** Requests it was sent, as `METHOD path?query`. */
  requests: string[];
  /**
   * From now on, requests for which `matches` (given `METHOD path?query`) is true are held without
   * an answer (`hold`) or reset (`reset`); null for none. Held ones are reset, and forgotten, when this changes.
   */
  misbehave(matches: ((request: string) => boolean) | null, how?: 'hold' | 'reset'): void;
  /** Requests held since the last `misbehave`, and whether their client has gone. */
  held(): { request: string; clientGone: boolean }[];
  close(): Promise<void>;
};

type Store = { getResourcePath(bucket: string, key: string | undefined, resource: string): string };

export async function startS3Server(): Promise<S3Server> {
  Object.assign(process.env, S3_CREDENTIALS);
  const directory = await mkdtemp(path.join(os.tmpdir(), 'vds-s3rver-'));
  const bucket = 'downloads';
  const s3rver = new S3rver({ directory, silent: true, configureBuckets: [{ name: bucket, configs: [] }] });
  await (s3rver as unknown as { configureBuckets(): Promise<void> }).configureBuckets();
  const store = (s3rver as unknown as { store: Store }).store;
  const uploadsDir = store.getResourcePath(bucket, undefined, 'uploads');
  const handle = s3rver.callback();
  const requests: string[] = [];
  let rule: { matches: (request: string) => boolean; how: 'hold' | 'reset' } | null = null;
  const held: { request: string; clientGone: boolean; socket: Socket }[] = [];

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://s3');
    const request = `${req.method} ${url.pathname}${url.search}`;
    requests.push(request);
    if (rule?.matches(request)) {
      if (rule.how === 'reset') {
        req.socket.destroy();
        return;
      }
      const entry = { request, clientGone: false, socket: req.socket };
      req.socket.once('close', () => (entry.clientGone = true));
      held.push(entry);
      return;
    }
    const uploadId = url.searchParams.get('uploadId');
    if (req.method === 'DELETE' && uploadId && /^[0-9a-f]+$/.test(uploadId)) {
      req.resume();
      void rm(path.join(uploadsDir, uploadId), { recursive: true, force: true }).then(() => res.writeHead(204).end());
      return;
    }
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });

  return {
    endpoint,
    bucket,
    requests,
    settings: (overrides = {}) => ({
      kind: 's3',
      bucket,
      prefix: '',
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      retrieval: 'stream',
      presignSeconds: 300,
      ...overrides,
    }),
    env: (overrides = {}) => ({ ...S3_CREDENTIALS, STORAGE: 's3', S3_BUCKET: bucket, S3_ENDPOINT: endpoint, S3_FORCE_PATH_STYLE: 'true', ...overrides }),
    async removeObject(id) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: id }));
    },
    async objectSize(id) {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: id })).catch(() => null);
      return head ? (head.ContentLength ?? 0) : null;
    },
    pendingUploads: () => readdir(uploadsDir).catch(() => []),
    misbehave(matches, how = 'hold') {
      for (const entry of held) entry.socket.destroy();
      held.length = 0;
      rule = matches ? { matches, how } : null;
    },
    held: () => held.map(({ request, clientGone }) => ({ request, clientGone })),
    async close() {
      for (const entry of held) entry.socket.destroy();
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(directory, { recursive: true, force: true });
    },
  };
}
