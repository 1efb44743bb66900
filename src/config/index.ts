import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { MAX_DOWNLOAD_TIMEOUT_SECONDS } from './download-timeout.ts';

// Every setting comes from the environment and is checked once, at start, so that a bad value stops
// the process with a message naming the variable instead of failing later in a download.

const bool = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);
const httpUrl = z.url({ protocol: /^https?$/ });
const cidr = z.string().refine((value) => ipaddr.isValidCIDR(value) || ipaddr.isValid(value), 'must be an IP address or CIDR range');
/** `true`, `false`, or the private ranges that are allowed, e.g. `192.168.1.0/24,10.0.0.5`. */
const privateAllowance = z.union([
  bool,
  z.string().transform((list, context) => {
    const ranges = list
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    const bad = ranges.find((range) => !cidr.safeParse(range).success);
    if (bad || ranges.length === 0) {
      context.addIssue({
        code: 'custom',
        message: `must be true, false, or a comma-separated list of IP addresses and CIDR ranges${bad ? ` (not: ${bad})` : ''}`,
      });
      return z.NEVER;
    }
    return ranges;
  }),
]);

/** Owners are HMACs under it: guessing it must be as hard as guessing a key. */
export const KEY_HASH_SECRET_RULE = 'must be at least 32 characters other than spaces (e.g. openssl rand -hex 32)';
const keyHashSecret = z.string().refine((value) => value.trim().length >= 32, KEY_HASH_SECRET_RULE);

/** A comma-separated list of API keys; blanks between commas are ignored. */
const keyList = z
  .string()
  .transform((keys) =>
    keys
      .split(',')
      .map((key) => key.trim())
      .filter(Boolean),
  )
  .default([]);

const schema = z.object({
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  BASE_PATH: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)*$/, 'must be empty or like /api/v1 (no trailing slash)')
    .default(''),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgresql:// URL' }).optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  PUBLIC_BASE_URL: httpUrl.transform((url) => url.replace(/\/+$/, '')).optional(),
  API_KEYS: keyList,
  ADMIN_API_KEYS: keyList,
  KEY_HASH_SECRET: keyHashSecret.optional(),
  MAX_ACTIVE_DOWNLOADS_PER_KEY: int(0).default(20),
  MAX_COLLECTION_ITEMS: int(1, 500).default(500),
  COLLECTION_CONCURRENCY: int(1, 64).default(2),
  SUBSCRIPTION_MIN_INTERVAL_SECONDS: int(1, 2_592_000).default(900),
  SUBSCRIPTION_SCAN_ENTRIES: int(1, 500).default(50),
  MAX_SUBSCRIPTIONS_PER_KEY: int(0).default(50),
  YTDLP: z.enum(['on', 'off']).default('on'),
  YTDLP_PATH: z.string().min(1).optional(),
  YTDLP_TIMEOUT_SECONDS: int(1, 3600).default(60),
  ALLOW_PRIVATE_ADDRESSES: privateAllowance.default(false),
  MAX_FILE_BYTES: int(1).default(2 * 1024 ** 3),
  // Twelve hours of one-second segments: any real VOD stream fits, a manifest bomb does not.
  MAX_SEGMENTS: int(1, 1_000_000).default(43_200),
  SEGMENT_CONCURRENCY: int(1, 64).default(32),
  DIRECT_CONNECTIONS: int(1, 32).default(8),
  FILE_TTL_SECONDS: int(1).default(86_400),
  WORKER_CONCURRENCY: int(1, 256).default(4),
  FFMPEG_PATH: z.string().min(1).optional(),
  SOURCE_CONNECT_TIMEOUT_SECONDS: int(1, 600).default(15),
  SOURCE_IDLE_TIMEOUT_SECONDS: int(1, 3600).default(30),
  SOURCE_MIN_BYTES_PER_SECOND: int(0).default(1024),
  DOWNLOAD_TIMEOUT_SECONDS: int(1)
    .max(
      MAX_DOWNLOAD_TIMEOUT_SECONDS,
      `must be at most ${MAX_DOWNLOAD_TIMEOUT_SECONDS}: a download's job must outlive it, and pg-boss lets a job run 24 hours at most`,
    )
    .default(6 * 3600),
  MAX_ATTEMPTS: int(1, 100).default(5),
  RETRY_DELAY_SECONDS: int(1, 3600).default(2),
  RATE_LIMIT_PER_MINUTE: int(0).default(120),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  // Standard Webhooks secrets are `whsec_` and the base64 of the key (24 to 64 random bytes).
  WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/, 'must be whsec_ followed by the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))')
    .optional(),
  WEBHOOK_MAX_ATTEMPTS: int(1, 50).default(12),
  WEBHOOK_RETRY_DELAY_SECONDS: int(1, 3600).default(60),
  MAX_EVENT_STREAMS: int(1, 100_000).default(1000),
  STORAGE: z.enum(['local', 's3']).default('local'),
  S3_BUCKET: z.string().min(1).optional(),
  S3_PREFIX: z.string().default(''),
  S3_ENDPOINT: httpUrl.optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_FORCE_PATH_STYLE: bool.default(false),
  S3_RETRIEVAL: z.enum(['stream', 'redirect']).default('stream'),
  // SigV4 presigned URLs live a week at most.
  S3_PRESIGN_SECONDS: int(1, 604_800).default(300),
  FILE_OFFLOAD: z.enum(['none', 'nginx']).default('none'),
  FILE_OFFLOAD_LOCATION: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+\/$/, 'must be a path like /internal/files/ (starting and ending with a slash)')
    .default('/_vds_files/'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: z
    .string()
    .transform((value): boolean | number | string => (value === 'true' ? true : value === 'false' ? false : /^\d+$/.test(value) ? Number(value) : value))
    .default(false),
});

/** Where finished files live: under DATA_DIR, or in an S3-compatible bucket (credentials from the AWS SDK's default chain). */
export type StorageSettings =
  | { kind: 'local' }
  | {
      kind: 's3';
      bucket: string;
      /** Put before every object key, e.g. `downloads/`. */
      prefix: string;
      /** Unset: AWS; set for MinIO, Ceph, R2, Garage... */
      endpoint: string | undefined;
      region: string;
      /** Bucket in the path rather than the host name; MinIO needs it. */
      forcePathStyle: boolean;
      /** `stream`: the service sends the bytes; `redirect`: 302 to a presigned GET. */
      retrieval: 'stream' | 'redirect';
      /** The longest a presigned GET lives (never past the token). */
      presignSeconds: number;
    };

export type Config = {
  port: number;
  host: string;
  basePath: string;
  databaseUrl: string | undefined;
  dataDir: string;
  publicBaseUrl: string | undefined;
  apiKeys: string[];
  /** Keys that see and cancel every download; they authenticate on their own. */
  adminApiKeys: string[];
  /** The secret owners are hashed under; unset: made and kept in DATA_DIR. */
  keyHashSecret: string | undefined;
  /** Downloads not yet ended that one (non-admin) key may have; 0 for no limit. */
  maxActiveDownloadsPerKey: number;
  /** Entries one collection may take from its source (the ceiling of `limit`). */
  maxCollectionItems: number;
  /** Children of one collection that run at once, however many workers there are. */
  collectionConcurrency: number;
  /** The shortest interval between a subscription's checks. */
  subscriptionMinIntervalSeconds: number;
  /** The newest entries a subscription's check lists. */
  subscriptionScanEntries: number;
  /** Subscriptions one (non-admin) key may have; 0 for no limit. */
  maxSubscriptionsPerKey: number;
  /** `off`: no site extraction even where yt-dlp is installed. */
  ytdlp: 'on' | 'off';
  /** The yt-dlp binary; unset: `yt-dlp` on PATH. */
  ytdlpPath: string | undefined;
  /** How long one extraction may take. */
  ytdlpTimeoutSeconds: number;
  /** All private addresses, none, or those in the listed ranges. */
  allowPrivateAddresses: boolean | string[];
  maxFileBytes: number;
  /** Segments one track of a stream may have (HLS playlist, DASH Representation). */
  maxSegments: number;
  /** Segments of one HLS or DASH download fetched at once. */
  segmentConcurrency: number;
  /** Connections one direct file may be fetched over at once, in ranged pieces. */
  directConnections: number;
  fileTtlSeconds: number;
  workerConcurrency: number;
  ffmpegPath: string | undefined;
  sourceConnectTimeoutSeconds: number;
  sourceIdleTimeoutSeconds: number;
  /** The slowest a download may arrive, averaged over each SOURCE_IDLE_TIMEOUT_SECONDS; 0 for no floor. */
  sourceMinBytesPerSecond: number;
  downloadTimeoutSeconds: number;
  maxAttempts: number;
  retryDelaySeconds: number;
  rateLimitPerMinute: number;
  role: 'all' | 'api' | 'worker';
  /** The key webhooks are signed with; without it no download may ask for one. */
  webhookSecret: string | undefined;
  webhookMaxAttempts: number;
  /** The first delay between webhook deliveries; it doubles, with jitter, up to six hours. */
  webhookRetryDelaySeconds: number;
  /** Event streams one API process holds open at once. */
  maxEventStreams: number;
  storage: StorageSettings;
  /** `nginx`: file bytes are left to the nginx in front (X-Accel-Redirect to `fileOffloadLocation`). */
  fileOffload: 'none' | 'nginx';
  /** nginx's internal location that maps to DATA_DIR/files/. */
  fileOffloadLocation: string;
  /** pino's level: `info` logs requests, state changes and the phases of downloads. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Express's `trust proxy`: whose X-Forwarded-* to believe for the client address and protocol. */
  trustProxy: boolean | number | string;
};

export class ConfigError extends Error {}

/** Reads the configuration from `env`; empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    // One line, like every other reason the service gives for not starting.
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`The service did not start: invalid configuration: ${problems.join('; ')} (docs/configuration.md).`);
  }
  const c = parsed.data;
  const conflict = conflicts(c);
  if (conflict) throw new ConfigError(`The service did not start: invalid configuration: ${conflict} (docs/configuration.md).`);
  return {
    port: c.PORT,
    host: c.HOST,
    basePath: c.BASE_PATH,
    databaseUrl: c.DATABASE_URL,
    dataDir: path.resolve(c.DATA_DIR),
    publicBaseUrl: c.PUBLIC_BASE_URL,
    apiKeys: c.API_KEYS,
    adminApiKeys: c.ADMIN_API_KEYS,
    keyHashSecret: c.KEY_HASH_SECRET,
    maxActiveDownloadsPerKey: c.MAX_ACTIVE_DOWNLOADS_PER_KEY,
    maxCollectionItems: c.MAX_COLLECTION_ITEMS,
    collectionConcurrency: c.COLLECTION_CONCURRENCY,
    subscriptionMinIntervalSeconds: c.SUBSCRIPTION_MIN_INTERVAL_SECONDS,
    subscriptionScanEntries: c.SUBSCRIPTION_SCAN_ENTRIES,
    maxSubscriptionsPerKey: c.MAX_SUBSCRIPTIONS_PER_KEY,
    ytdlp: c.YTDLP,
    ytdlpPath: c.YTDLP_PATH,
    ytdlpTimeoutSeconds: c.YTDLP_TIMEOUT_SECONDS,
    allowPrivateAddresses: c.ALLOW_PRIVATE_ADDRESSES,
    maxFileBytes: c.MAX_FILE_BYTES,
    maxSegments: c.MAX_SEGMENTS,
    segmentConcurrency: c.SEGMENT_CONCURRENCY,
    directConnections: c.DIRECT_CONNECTIONS,
    fileTtlSeconds: c.FILE_TTL_SECONDS,
    workerConcurrency: c.WORKER_CONCURRENCY,
    ffmpegPath: c.FFMPEG_PATH,
    sourceConnectTimeoutSeconds: c.SOURCE_CONNECT_TIMEOUT_SECONDS,
    sourceIdleTimeoutSeconds: c.SOURCE_IDLE_TIMEOUT_SECONDS,
    sourceMinBytesPerSecond: c.SOURCE_MIN_BYTES_PER_SECOND,
    downloadTimeoutSeconds: c.DOWNLOAD_TIMEOUT_SECONDS,
    maxAttempts: c.MAX_ATTEMPTS,
    retryDelaySeconds: c.RETRY_DELAY_SECONDS,
    rateLimitPerMinute: c.RATE_LIMIT_PER_MINUTE,
    role: c.ROLE,
    webhookSecret: c.WEBHOOK_SECRET,
    webhookMaxAttempts: c.WEBHOOK_MAX_ATTEMPTS,
    webhookRetryDelaySeconds: c.WEBHOOK_RETRY_DELAY_SECONDS,
    maxEventStreams: c.MAX_EVENT_STREAMS,
    storage: storageSettings(c),
    fileOffload: c.FILE_OFFLOAD,
    fileOffloadLocation: c.FILE_OFFLOAD_LOCATION,
    logLevel: c.LOG_LEVEL,
    trustProxy: c.TRUST_PROXY,
  };
}

type Parsed = z.infer<typeof schema>;

/** Settings that are each valid but not together. */
function conflicts(c: Parsed): string | null {
  if (c.STORAGE !== 's3') return null;
  if (!c.S3_BUCKET) return 'S3_BUCKET: must be set with STORAGE=s3';
  if (c.FILE_OFFLOAD === 'nginx') return 'FILE_OFFLOAD: nginx serves files from DATA_DIR, which STORAGE=s3 does not use; use S3_RETRIEVAL=redirect instead';
  // Several machines that share no disk must hash keys alike: a secret made in one DATA_DIR is not.
  if ((c.API_KEYS.length > 0 || c.ADMIN_API_KEYS.length > 0) && !c.KEY_HASH_SECRET && c.ROLE !== 'worker') {
    return 'KEY_HASH_SECRET: must be set (the same on every machine) with STORAGE=s3 and API keys, since no DATA_DIR is shared to keep one in';
  }
  return null;
}

function storageSettings(c: Parsed): StorageSettings {
  if (c.STORAGE === 'local') return { kind: 'local' };
  return {
    kind: 's3',
    bucket: c.S3_BUCKET!,
    prefix: c.S3_PREFIX,
    endpoint: c.S3_ENDPOINT,
    region: c.S3_REGION,
    forcePathStyle: c.S3_FORCE_PATH_STYLE,
    retrieval: c.S3_RETRIEVAL,
    presignSeconds: c.S3_PRESIGN_SECONDS,
  };
}
