import type { SourceReader } from '../reader.ts';
import { directReader } from './direct.ts';
import { noSiteReader } from './no-site.ts';
import { PageReader } from './page.ts';
import { dashReader, hlsReader } from './streams.ts';

/** The readers of sites, when the server has an extractor: one for sites it knows by name, one for any page. */
export type SiteReaders = { dedicated: SourceReader; generic: SourceReader };

const FILES_AND_STREAMS: readonly SourceReader[] = [directReader, hlsReader, dashReader];

/**
 * Every reader, in the order they are asked. What the answer's bytes say it is comes first (a file,
 * a stream); a page goes to a site's own extractor before the built-in page reader, since a
 * platform's page can carry a misleading og:video; what the page reader finds nothing in goes to
 * the extractor's generic reading last.
 */
export function sourceReaders(site: SiteReaders | null): SourceReader[] {
  const page = new PageReader(FILES_AND_STREAMS);
  return site ? [...FILES_AND_STREAMS, site.dedicated, page, site.generic] : [...FILES_AND_STREAMS, page, noSiteReader];
}
