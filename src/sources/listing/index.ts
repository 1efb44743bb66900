import type { SourceHttp } from '../../net/guarded-client.ts';
import type { SiteReaderDeps } from '../readers/site.ts';

// PLACEHOLDER until the listing engine lands: one entry, the URL itself.
export type ListedEntry = { id: string | null; url: string; title: string | null; durationSeconds: number | null };
export type Listing = { title: string | null; extractor: string; entries: ListedEntry[]; truncated: boolean };
export type ListingDeps = { http: SourceHttp; site: SiteReaderDeps | null };

export async function listEntries(_deps: ListingDeps, url: string, _options: { limit: number; signal: AbortSignal }): Promise<Listing> {
  return { title: null, extractor: 'direct', entries: [{ id: null, url, title: null, durationSeconds: null }], truncated: false };
}
