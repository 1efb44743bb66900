import type { types } from 'hls-parser';
import type { Mode } from '../../core/mode.ts';
import type { Quality } from '../../core/quality.ts';
import { codecList, isAudioCodec } from '../audio-codecs.ts';

// Quality picks among the variant streams by picture size first: bandwidth only separates variants
// of the same size (several bitrates of 720p), and I-frame-only variants are for trick play.

export function isAudioOnly(variant: types.Variant): boolean {
  if (variant.resolution) return false;
  const codecs = codecList(variant.codecs ?? '');
  return codecs.length > 0 && codecs.every(isAudioCodec);
}

/** Ascending: height, then width, then bandwidth. A variant without RESOLUTION ranks as the smallest. */
function compare(a: types.Variant, b: types.Variant): number {
  return (
    (a.resolution?.height ?? 0) - (b.resolution?.height ?? 0) ||
    (a.resolution?.width ?? 0) - (b.resolution?.width ?? 0) ||
    (a.bandwidth ?? 0) - (b.bandwidth ?? 0)
  );
}

// On a tie the variant listed first wins: the master's author put it first for a reason.
const highest = (variants: types.Variant[]) => variants.reduce((kept, next) => (compare(next, kept) > 0 ? next : kept));
const lowest = (variants: types.Variant[]) => variants.reduce((kept, next) => (compare(next, kept) < 0 ? next : kept));

/**
 * The variant `quality` asks for, or undefined when the master lists none that can be played. For
 * mode `audio`, an audio-only variant (the highest bandwidth) wins over any with a picture.
 */
export function chooseVariant(variants: types.Variant[], quality: Quality, mode: Mode = 'video'): types.Variant | undefined {
  const playable = variants.filter((variant) => !variant.isIFrameOnly);
  const audioOnly = playable.filter(isAudioOnly);
  if (mode === 'audio' && audioOnly.length > 0) return audioOnly.reduce((kept, next) => ((next.bandwidth ?? 0) > (kept.bandwidth ?? 0) ? next : kept));
  const withVideo = playable.filter((variant) => !isAudioOnly(variant));
  const candidates = withVideo.length > 0 ? withVideo : playable;
  if (candidates.length === 0) return undefined;
  if (quality === 'best') return highest(candidates);
  if (quality === 'worst') return lowest(candidates);
  const fitting = candidates.filter((variant) => (variant.resolution?.height ?? 0) <= quality);
  return fitting.length > 0 ? highest(fitting) : lowest(candidates);
}

/**
 * The URI of the audio rendition to fetch beside the variant: the group's DEFAULT=YES one, else its
 * first. Undefined when that rendition has no URI, which means its audio is inside the variant.
 */
export function chooseAudioUri(variant: types.Variant): string | undefined {
  const rendition = variant.audio.find((candidate) => candidate.isDefault) ?? variant.audio[0];
  return rendition?.uri || undefined;
}
