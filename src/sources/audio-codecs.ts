// HLS CODECS and DASH @codecs name their codecs alike (RFC 6381), so one list tells both what carries
// no picture: an audio-only HLS variant is passed over for one with video, a lone DASH video
// Representation that also names an audio codec is muxed.

/** Codec families (the part before the first dot) that are audio. */
export const AUDIO_CODEC_FAMILIES = ['mp4a', 'ac-3', 'ec-3', 'ac-4', 'opus', 'vorbis', 'flac', 'mp3', 'dtsc', 'alac'] as const;

const AUDIO_CODEC = new RegExp(`^(?:${AUDIO_CODEC_FAMILIES.join('|')})(?:\\.|$)`, 'i');

/** The codecs a CODECS attribute lists, without the blanks a stray comma leaves. */
export function codecList(attribute: string): string[] {
  return attribute
    .split(',')
    .map((codec) => codec.trim())
    .filter(Boolean);
}

export function isAudioCodec(codec: string): boolean {
  return AUDIO_CODEC.test(codec);
}
