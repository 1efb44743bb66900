/** A request target's path as a server logged it: without the query string, percent-decoded where that is valid. */
export function decodedPath(target: string): string {
  const bare = target.split('?')[0]!;
  try {
    return decodeURIComponent(bare);
  } catch {
    return bare;
  }
}
