import { NothingFound, type Arrival, type FetchedMedia, type SourceReader } from '../reader.ts';

/**
 * Where the site reader stands when the server has no yt-dlp: a page (or anything else) in which
 * nothing was found is refused with what would have read it.
 */
export const noSiteReader: SourceReader = {
  // What it stands in for never ran: the URL was read as a page, and nothing was found in it.
  kind: 'page',
  takes: (arrival: Arrival) => arrival.detected === 'page' || arrival.detected === null,
  read(_ctx, arrival: Arrival): Promise<FetchedMedia> {
    throw new NothingFound(
      `No video or audio was found at ${arrival.url}. If it is a video site's page, installing yt-dlp on the server enables extraction from sites.`,
    );
  },
};
