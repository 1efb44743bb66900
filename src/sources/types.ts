import type { LocalStorage } from '../storage/local.ts';

/** What a source needs to fetch one download into its working directory. */
export type SourceContext = {
  url: string;
  workDir: string;
  storage: LocalStorage;
  signal: AbortSignal;
  maxFileBytes: number;
  /** The validator remembered from an earlier attempt, for If-Range. */
  validator: string | null;
  rememberValidator(validator: string | null): Promise<void>;
  /** Called as bytes arrive; the caller decides how often to record it. */
  progress(downloadedBytes: number, totalBytes: number | null): void;
};

export type FetchedFile = {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** The Content-Type the source declared; the file's first bytes are the better witness. */
  declaredType: string | null;
};
