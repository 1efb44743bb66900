import { createClient, type VideoDownloadClient } from '../../client/index.ts';

// The page's connection to the service it was served by: the same origin, under its BASE_PATH
// (the <base> element the server writes), with the API key the person gave, kept in this browser.

const KEY = 'vds.apiKey';

export function storedKey(): string {
  return localStorage.getItem(KEY) ?? '';
}

export function storeKey(key: string): void {
  if (key) localStorage.setItem(KEY, key);
  else localStorage.removeItem(KEY);
}

export function clientFor(apiKey: string): VideoDownloadClient {
  return createClient({ baseUrl: new URL('.', document.baseURI).href, apiKey: apiKey || undefined });
}
