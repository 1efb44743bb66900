import type { Download, ErrorCode, Problem } from './types.ts';

/**
 * What the SDK throws when the service says no: a non-2xx answer (its problem+json in `problem`),
 * or a download that ended without a file where one was awaited (`download` is then that download,
 * and `code` its error code when it failed).
 */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';

  constructor(
    /** The HTTP status of the answer; for a download that ended without a file, the status its problem describes. */
    readonly status: number,
    readonly problem: Problem,
    readonly download?: Download,
  ) {
    super(problem.detail);
  }

  /** The download's error code (`source_http_error`, ...) when the download failed. */
  get code(): ErrorCode | undefined {
    return this.download?.error?.code;
  }

  /** The problem+json of an answer, or a problem made from the status when the body was not one (a proxy's error page, say). */
  static async fromResponse(response: Response, body?: unknown): Promise<ProblemError> {
    const parsed = body ?? (await response.json().catch(() => undefined));
    const problem = isProblem(parsed)
      ? parsed
      : {
          type: 'about:blank',
          title: response.statusText || `HTTP ${response.status}`,
          status: response.status,
          detail: `The server answered ${response.status}.`,
        };
    return new ProblemError(response.status, problem);
  }

  /** A download that ended failed, cancelled or expired where a completed one was awaited. */
  static ended(download: Download): ProblemError {
    const detail = download.error
      ? download.error.message
      : download.status === 'cancelled'
        ? 'The download was cancelled.'
        : 'The download has expired: its file is gone.';
    // 502 for a source that failed (the service stood in for it), 410 for a file that will not come.
    const status = download.status === 'failed' ? 502 : 410;
    return new ProblemError(status, { type: 'about:blank', title: `Download ${download.status}`, status, detail }, download);
  }
}

function isProblem(value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false;
  const { title, status, detail } = value as Record<string, unknown>;
  return typeof title === 'string' && typeof status === 'number' && typeof detail === 'string';
}

/**
 * fetch reports a refused or cut connection as a TypeError. Told by name, since the fetch may come
 * from another realm than this module (a test VM, an iframe), whose TypeError is another class.
 */
export const isNetworkError = (error: unknown): boolean => typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'TypeError';
