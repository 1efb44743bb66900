import { arrive } from '../arrival.ts';
import type { MediaContext, SourceReader } from '../reader.ts';
import { directReader, readDirect } from './direct.ts';
import { noSiteReader } from './no-site.ts';
import { PageReader } from './page.ts';
import { SiteReader, type FormatReaders, type SiteReaderDeps } from './site.ts';
import { dashReader, fetchStream, hlsReader } from './streams.ts';

const FILES_AND_STREAMS: readonly SourceReader[] = [directReader, hlsReader, dashReader];
// A site's file is asked for first when a clip is wanted, so that its answer can tell whether only the clip's ranges need fetching.
const siteFile = async (ctx: MediaContext) => readDirect(ctx, ctx.clip ? await arrive(ctx, ctx.url) : undefined);
const SITE_FORMATS: FormatReaders = { streams: [hlsReader, dashReader], file: siteFile, tracks: fetchStream };

/**
 * Every reader, in the order they are asked. What the answer's bytes say it is comes first (a file,
 * a stream); a page goes to a site's own extractor before the built-in page reader, since a
 * platform's page can carry a misleading og:video; what the page reader finds nothing in goes to
 * the extractor's generic reading last.
 */
export function sourceReaders(site: SiteReaderDeps | null): SourceReader[] {
  const page = new PageReader(FILES_AND_STREAMS);
  if (!site) return [...FILES_AND_STREAMS, page, noSiteReader];
  // One for the sites the extractor knows by name, one for any page.
  return [...FILES_AND_STREAMS, new SiteReader(site, 'dedicated', SITE_FORMATS), page, new SiteReader(site, 'generic', SITE_FORMATS)];
}
