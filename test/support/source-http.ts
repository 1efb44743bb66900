import { SourceHttp } from '../../src/net/guarded-client.ts';

/** The service's source client as tests use it: fixture servers live on 127.0.0.1. */
export function testSourceHttp(): SourceHttp {
  return new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: 5_000, idleTimeoutMs: 5_000, minBytesPerSecond: 0 });
}
