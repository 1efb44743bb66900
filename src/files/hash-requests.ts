// What crosses between the service and its hashing thread (hash-thread.ts, hash-worker.ts).

export type HashRequest =
  /** Starts following `file`: its bytes are hashed from its start as far as `upTo` says they are written. */
  | { op: 'open'; id: number; file: string }
  /** Bytes [0, end) of the job's file are on the disk; Infinity reads on to the file's end. */
  | { op: 'upTo'; id: number; end: number }
  /** The hash of the file's first `size` bytes (null: all of it), once they are read; the job ends. */
  | { op: 'digest'; id: number; size: number | null }
  /** The job ends without a hash. */
  | { op: 'drop'; id: number };

export type HashReply = { id: number; sha256: string } | { id: number; failure: string };
