import { hashThread } from './hash-thread.ts';

/** The sha256 (hex) of a file's bytes, read and hashed on the hashing thread. */
export function sha256OfFile(file: string, signal?: AbortSignal): Promise<string> {
  return hashThread.follow(file).digest(null, signal);
}
