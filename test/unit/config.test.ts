import { ConfigError, loadConfig } from '../../src/config/index.ts';

describe('configuration', () => {
  test('when nothing is set, then the documented defaults apply', () => {
    expect(loadConfig({})).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      apiKeys: [],
      adminApiKeys: [],
      keyHashSecret: undefined,
      maxActiveDownloadsPerKey: 20,
      allowPrivateAddresses: false,
      maxFileBytes: 2147483648,
      fileTtlSeconds: 86400,
      workerConcurrency: 4,
      role: 'all',
    });
  });

  test('when values are set, then they are parsed', () => {
    const config = loadConfig({
      PORT: '8080',
      API_KEYS: 'a, b,,c',
      ADMIN_API_KEYS: ' root ,',
      MAX_ACTIVE_DOWNLOADS_PER_KEY: '0',
      ALLOW_PRIVATE_ADDRESSES: 'true',
      PUBLIC_BASE_URL: 'https://v.example.com/',
    });
    expect(config).toMatchObject({
      port: 8080,
      apiKeys: ['a', 'b', 'c'],
      adminApiKeys: ['root'],
      maxActiveDownloadsPerKey: 0,
      allowPrivateAddresses: true,
      publicBaseUrl: 'https://v.example.com',
    });
  });

  test('when DOWNLOAD_TIMEOUT_SECONDS is past 6 hours and within what pg-boss allows a job, then it is taken', () => {
    expect(loadConfig({ DOWNLOAD_TIMEOUT_SECONDS: '36000' }).downloadTimeoutSeconds).toBe(36000);
    expect(loadConfig({ DOWNLOAD_TIMEOUT_SECONDS: '86100' }).downloadTimeoutSeconds).toBe(86100);
  });

  test.each([
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['WORKER_CONCURRENCY', '0'],
    ['ALLOW_PRIVATE_ADDRESSES', 'yes please'],
    ['BASE_PATH', 'api/'],
    ['PUBLIC_BASE_URL', 'ftp://example.com'],
    // A day: a download's job must outlive it, and pg-boss lets a job run 24 hours at most.
    ['DOWNLOAD_TIMEOUT_SECONDS', '86400'],
    // Owners are HMACs under it: a short secret would make them a table lookup away from the keys.
    ['KEY_HASH_SECRET', 'too-short'],
    ['MAX_ACTIVE_DOWNLOADS_PER_KEY', '-1'],
    ['STORAGE', 'nfs'],
    ['S3_RETRIEVAL', 'proxy'],
    ['S3_PRESIGN_SECONDS', '604801'],
  ])('when %s is %p, then start fails with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}:`));
  });

  test('when STORAGE=s3 is set with its settings, then they are parsed, with the documented defaults', () => {
    expect(loadConfig({ STORAGE: 's3', S3_BUCKET: 'videos' }).storage).toEqual({
      kind: 's3',
      bucket: 'videos',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
      retrieval: 'stream',
      presignSeconds: 300,
    });
    expect(
      loadConfig({
        STORAGE: 's3',
        S3_BUCKET: 'videos',
        S3_PREFIX: 'vds/',
        S3_ENDPOINT: 'http://minio:9000',
        S3_FORCE_PATH_STYLE: 'true',
        S3_RETRIEVAL: 'redirect',
      }).storage,
    ).toMatchObject({ prefix: 'vds/', endpoint: 'http://minio:9000', forcePathStyle: true, retrieval: 'redirect' });
    expect(loadConfig({}).storage).toEqual({ kind: 'local' });
  });

  test.each([
    [{ STORAGE: 's3' }, /S3_BUCKET: must be set with STORAGE=s3/],
    [{ STORAGE: 's3', S3_BUCKET: 'b', FILE_OFFLOAD: 'nginx' }, /FILE_OFFLOAD: .*S3_RETRIEVAL=redirect/],
    [{ STORAGE: 's3', S3_BUCKET: 'b', API_KEYS: 'k' }, /KEY_HASH_SECRET: must be set/],
  ])('when STORAGE=s3 comes with %p, then start fails with a message naming what is missing', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  test('when STORAGE=s3 and keys run a worker only, then no KEY_HASH_SECRET is needed (workers hash no keys)', () => {
    expect(loadConfig({ STORAGE: 's3', S3_BUCKET: 'b', API_KEYS: 'k', ROLE: 'worker' }).role).toBe('worker');
  });
});
