import { parseJson } from '../../core/json.ts';

// schema.org markup nests freely (an @graph, a WebPage's `video`, an ItemList of videos), so the
// whole tree is searched rather than a few known paths. The page is an attacker's and JSON.parse
// takes `[[[[…]]]]` a million deep, so the search keeps its own stack instead of recursing.

function isVideoObject(type: unknown): boolean {
  return [type].flat().some((name) => typeof name === 'string' && /(?:^|[/:#])VideoObject$/.test(name.trim()));
}

function urlsOf(value: unknown): string[] {
  return [value].flat().flatMap((item) => {
    if (typeof item === 'string') return [item];
    const id = (item as { '@id'?: unknown } | null)?.['@id'];
    return typeof id === 'string' ? [id] : [];
  });
}

/** Depth first, in document order: an object's own contentUrl before those of what it contains. */
function collectContentUrls(root: unknown, urls: string[]): void {
  const pending: unknown[] = [root];
  const pushReversed = (values: unknown[]) => {
    for (let index = values.length - 1; index >= 0; index--) pending.push(values[index]);
  };
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) {
      pushReversed(node);
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const record = node as Record<string, unknown>;
    const type = record['@type'];
    // One by one: spreading a list of a million URLs into push() would overflow the stack.
    if (type !== undefined && isVideoObject(type)) for (const url of urlsOf(record.contentUrl)) urls.push(url);
    pushReversed(Object.values(record));
  }
}

/** `contentUrl` of every VideoObject in the page's JSON-LD blocks (their text), in document order. */
export function videoObjectUrls(blocks: string[]): string[] {
  const urls: string[] = [];
  // One broken block (common: trailing commas, HTML comments) must not hide the page's others.
  for (const block of blocks) collectContentUrls(parseJson(block), urls);
  return urls;
}
