import { inheritAttributes, stringToMpdXml, toM3u8, toPlaylists, type MpdElement, type ParsedManifest, type ParsedPlaylist } from 'mpd-parser';
import { DownloadError } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { Quality } from '../../core/quality.ts';
import { codecList, isAudioCodec } from '../audio-codecs.ts';
import { unreadable } from '../document-kinds.ts';
import type { MediaPlan, SubtitleOffer, Track } from '../types.ts';
import { refuseTooManyRepresentations, refuseTooManySegments } from './bounds.ts';
import { chooseAudio, chooseVideo } from './choice.ts';
import { refuseLive, refuseProtected, refuseUncountedSegments } from './refusals.ts';
import { toTrack } from './track.ts';

// A static MPD to the tracks to fetch: the video Representation that fits `quality` and the best
// audio, or one muxed track when the manifest has no separate audio. Needs no network (a
// SegmentBase is fetched whole instead of reading its sidx) and is a pure function of its input:
// it runs in the sandbox's thread.

/** `step()`, with any failure of the parser itself reported as an unreadable manifest. */
function parsing<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw unreadable('dash', error);
  }
}

function read(input: DashInput): { mpd: MpdElement; manifest: ParsedManifest } {
  const mpd = parsing(() => stringToMpdXml(input.text));
  // Checked before parsing: a live MPD may not even parse without a clock to place its window.
  refuseLive(mpd);
  refuseTooManyRepresentations(mpd);
  const inherited = parsing(() => inheritAttributes(mpd, { manifestUri: input.url }));
  refuseTooManySegments(inherited.representationInfo, input.maxSegments);
  refuseUncountedSegments(inherited.representationInfo);
  const manifest = parsing(() =>
    toM3u8({
      dashPlaylists: toPlaylists(inherited.representationInfo),
      locations: inherited.locations,
      contentSteering: inherited.contentSteeringInfo,
      eventStream: inherited.eventStream,
    }),
  );
  return { mpd, manifest };
}

/** Video without separate audio is muxed unless its codecs say it carries no audio. */
function soleTrackKind(video: ParsedPlaylist): Track['kind'] {
  const codecs = video.attributes.CODECS;
  return codecs === undefined || codecList(codecs).some(isAudioCodec) ? 'muxed' : 'video';
}

/** `mode`: `audio` plans the audio alone where the MPD has it apart, `mute` no audio; default `video`. */
/** At most this many text sets are offered. */
const MAX_TEXT_SETS = 64;

/**
 * Text AdaptationSets, offered as subtitles under their label: one file each (no codecs: WebVTT or
 * TTML), or TTML in fMP4 segments (`stpp`). WebVTT in fMP4 (`wvtt`) is not read yet.
 */
function subtitleOffers(manifest: ParsedManifest): SubtitleOffer[] {
  return Object.entries(manifest.mediaGroups?.SUBTITLES?.subs ?? {})
    .slice(0, MAX_TEXT_SETS)
    .flatMap(([label, group]): SubtitleOffer[] => {
      const language = group.language ?? null;
      const whole = group.playlists.find((playlist) => !playlist.attributes.CODECS && playlist.segments?.length === 1);
      const url = whole?.segments?.[0]?.resolvedUri;
      if (url) return [{ url, language, label, format: 'file' }];
      // Each media segment's samples are whole TTML documents: the init segment is not needed.
      const segments = group.playlists.find((playlist) => playlist.attributes.CODECS?.startsWith('stpp'))?.segments?.map((segment) => segment.resolvedUri);
      return segments?.length ? [{ url: segments[0]!, language, label, format: 'stpp', segments }] : [];
    });
}

export type DashInput = { url: string; text: string; quality: Quality; mode?: Mode; maxSegments: number };

export function planDash(input: DashInput): MediaPlan {
  const { mpd, manifest } = read(input);
  const allVideo = chooseVideo(manifest.playlists ?? [], input.quality);
  const allAudio = chooseAudio(Object.values(manifest.mediaGroups?.AUDIO?.audio ?? {}));
  if (!allVideo && !allAudio) throw new DownloadError('unsupported_source', 'The DASH manifest has no video or audio Representation.');
  // What the mode throws away is not planned, so none of its segments is fetched; a picture that
  // carries the only sound stays for mode `audio` (its audio is copied out afterwards).
  const video = input.mode === 'audio' && allAudio ? undefined : allVideo;
  const audio = input.mode === 'mute' && allVideo ? undefined : allAudio;

  refuseProtected(mpd, new Set([video, audio].flatMap((playlist) => (playlist ? [playlist.attributes.NAME] : []))));
  const tracks: Track[] = [];
  if (video) tracks.push(toTrack(allAudio ? 'video' : soleTrackKind(video), video, input.url));
  if (audio) tracks.push(toTrack('audio', audio, input.url));
  return { tracks, subtitles: subtitleOffers(manifest) };
}
