import { getOptions, parse, setOptions, type types } from 'hls-parser';
import { DownloadError } from '../../core/errors.ts';

export type Playlist = types.MasterPlaylist | types.MediaPlaylist;

/** Parses playlist text, or refuses it as `unsupported_source`. */
export function parsePlaylist(text: string, url: string): Playlist {
  if (!text.trimStart().startsWith('#EXTM3U')) {
    throw new DownloadError('unsupported_source', `${url} is not an HLS playlist (it does not start with #EXTM3U).`);
  }
  // Lenient like players: a playlist that bends a rule of the spec still plays, so it should still
  // download. hls-parser's options are global, hence restored; silent keeps it from printing each
  // complaint to the console.
  const previous = getOptions();
  setOptions({ strictMode: false, silent: true });
  try {
    return parse(text);
  } catch (error) {
    throw new DownloadError('unsupported_source', `The HLS playlist at ${url} could not be parsed: ${(error as Error).message}`);
  } finally {
    setOptions({ strictMode: previous.strictMode, silent: previous.silent });
  }
}
