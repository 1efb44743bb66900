import { textContent } from 'domutils';
import { elementsNamed, type HtmlDocument } from './dom.ts';

// schema.org markup nests freely (an @graph, a WebPage's `video`, an ItemList of videos), so the
// whole tree is searched rather than a few known paths.

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

function collectContentUrls(node: unknown, urls: string[]): void {
  if (Array.isArray(node)) {
    for (const item of node) collectContentUrls(item, urls);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  if (isVideoObject(record['@type'])) urls.push(...urlsOf(record.contentUrl));
  for (const value of Object.values(record)) collectContentUrls(value, urls);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // One broken block (common: trailing commas, HTML comments) must not hide the page's others.
    return undefined;
  }
}

/** `contentUrl` of every VideoObject in the page's JSON-LD blocks, in document order. */
export function videoObjectUrls(document: HtmlDocument): string[] {
  const urls: string[] = [];
  for (const script of elementsNamed(document, 'script')) {
    if (script.attribs.type?.trim().toLowerCase() !== 'application/ld+json') continue;
    collectContentUrls(parseJson(textContent(script)), urls);
  }
  return urls;
}
