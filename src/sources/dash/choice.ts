import type { ParsedAudioGroup, ParsedPlaylist } from 'mpd-parser';
import type { Quality } from '../../core/quality.ts';

// Which Representations to fetch. Missing heights and bandwidths count as 0, so a manifest that
// leaves them out still yields a choice instead of an error.

const heightOf = (playlist: ParsedPlaylist) => playlist.attributes.RESOLUTION?.height ?? 0;
const bandwidthOf = (playlist: ParsedPlaylist) => playlist.attributes.BANDWIDTH ?? 0;

/** `best`: highest height, then bandwidth; `worst`: the lowest; N: the best with height <= N, else the lowest. */
export function chooseVideo(playlists: readonly ParsedPlaylist[], quality: Quality): ParsedPlaylist | undefined {
  const ascending = [...playlists].sort((a, b) => heightOf(a) - heightOf(b) || bandwidthOf(a) - bandwidthOf(b));
  if (quality === 'worst') return ascending[0];
  if (quality === 'best') return ascending.at(-1);
  return ascending.findLast((playlist) => heightOf(playlist) <= quality) ?? ascending[0];
}

/** The highest bandwidth of the default language (Role "main", else the first AdaptationSet). */
export function chooseAudio(groups: readonly ParsedAudioGroup[]): ParsedPlaylist | undefined {
  const preferred = groups.some((group) => group.default) ? groups.filter((group) => group.default) : groups;
  return preferred
    .flatMap((group) => group.playlists)
    .reduce<ParsedPlaylist | undefined>((best, playlist) => (best && bandwidthOf(best) >= bandwidthOf(playlist) ? best : playlist), undefined);
}
