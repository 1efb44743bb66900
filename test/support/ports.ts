import getPort from 'get-port';

/** A loopback port that was free a moment ago: a URL naming it reaches nothing. */
export function unusedPort(): Promise<number> {
  return getPort({ host: '127.0.0.1' });
}
