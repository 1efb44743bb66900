// The part of s3rver 3.7 (which ships no types) that the tests use: a Koa app with a filesystem store.
declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  type Options = { directory: string; silent?: boolean; configureBuckets?: { name: string; configs: string[] }[] };

  export default class S3rver {
    constructor(options: Options);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  }
}
