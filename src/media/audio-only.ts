import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { containerOfDeclared, MATROSKA_AUDIO, type Container } from './containers.ts';
import { failureLine, timeLimitMs } from './ffmpeg.ts';
import { inputArgs } from './input.ts';
import { removeOutputs, sizeLimitArgs, writeOutput, type OutputTarget, type RemuxedFile } from './output-file.ts';
import { probe } from './probe.ts';

// `mode: "audio"`: the first audio stream of a file (muxed or audio-only), alone in a file of its
// own. `audio_format: "best"` never re-encodes; `m4a`, `mp3` and `opus` copy a stream that already
// is AAC, MP3 or Opus, and re-encode anything else. Both ffmpegs the service runs on have the
// encoders used here (`ffmpeg -encoders`): Debian 12's 5.1 and the bundled 2018 static build have
// `aac` (FFmpeg's own), `libmp3lame` and `libopus`.

export type AudioFormat = 'best' | 'm4a' | 'mp3' | 'opus';

export type AudioFile = RemuxedFile & {
  /** The codec of the written stream, as ffmpeg names it (`aac`, `mp3`, `opus`, `vorbis`...). */
  audioCodec: string;
  /** Whether the stream was re-encoded (false: its packets are the source's). */
  reencoded: boolean;
};

export type ExtractAudioInput = {
  ffmpeg: string;
  input: string;
  /** Where to write: this path plus the extension of the container chosen. */
  output: string;
  format: AudioFormat;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
};

function row(declared: string): Container {
  const container = containerOfDeclared(declared);
  if (!container) throw new Error(`The container table has no row for ${declared}.`);
  return container;
}

// The `ipod` muxer writes the M4A flavour of MP4 (brand M4A) that music players expect.
const M4A: OutputTarget = { container: row('audio/mp4'), args: ['-movflags', '+faststart', '-f', 'ipod'] };
const MP3: OutputTarget = { container: row('audio/mpeg'), args: ['-f', 'mp3'] };
const OPUS: OutputTarget = { container: row('audio/opus'), args: ['-f', 'opus'] };
const OGG: OutputTarget = { container: row('audio/ogg'), args: ['-f', 'ogg'] };
const FLAC: OutputTarget = { container: row('audio/flac'), args: ['-f', 'flac'] };
const MKA: OutputTarget = { container: MATROSKA_AUDIO, args: ['-f', 'matroska'] };
const TARGETS = [M4A, MP3, OPUS, OGG, FLAC, MKA];

// `best`: each codec in the container made for it, when the table has one: AAC and ALAC in M4A,
// MP3 in MP3, Opus in Ogg Opus (`.opus`), Vorbis in Ogg (`.ogg`), FLAC in FLAC. Any other codec
// (AC-3, E-AC-3, DTS, MP2, PCM, WMA...) goes into Matroska audio (`.mka`), which holds every codec
// ffmpeg reads with its timestamps; their raw forms (`.ac3`, `.wav`) would lose the timestamps or
// have no row to be served by.
const OWN_CONTAINER: Record<string, OutputTarget> = { aac: M4A, alac: M4A, mp3: MP3, opus: OPUS, vorbis: OGG, flac: FLAC };

// What each format re-encodes to. AAC at 192k and Opus at 128k are transparent for almost all
// sources; `-q:a 2` is LAME's VBR preset V2 (about 190 kb/s). libopus takes only the channel
// layouts of Vorbis order, so any other (5.1(side), 2.1...) is mixed to the nearest of those first;
// libmp3lame takes mono and stereo, which ffmpeg mixes to by itself.
const ENCODE: Record<Exclude<AudioFormat, 'best'>, { codec: string; target: OutputTarget; args: string[] }> = {
  m4a: { codec: 'aac', target: M4A, args: ['-c:a', 'aac', '-b:a', '192k'] },
  mp3: { codec: 'mp3', target: MP3, args: ['-c:a', 'libmp3lame', '-q:a', '2'] },
  opus: {
    codec: 'opus',
    target: OPUS,
    args: ['-af', 'aformat=channel_layouts=mono|stereo|3.0|quad|5.0|5.1|6.1|7.1', '-c:a', 'libopus', '-b:a', '128k'],
  },
};

// A re-encode costs a decode and an encode of every second of sound, on top of the reading that
// `timeLimitMs` pays for. These encoders run at 30 to 100 times real time on one core; a tenth of
// the duration leaves room for a machine that is busy with other work. Where the file does not say
// how long it lasts, its size at 32 kb/s stands in (a longer guess than any real audio gives), and
// no guess counts more than 24 hours of sound.
const ENCODE_SPEED = 10;
const FALLBACK_BYTES_PER_SECOND = 4000;
const MAX_ENCODED_SECONDS = 24 * 3600;

function encodeAllowanceMs(durationSeconds: number | null, inputBytes: number): number {
  const seconds = Math.min(durationSeconds ?? inputBytes / FALLBACK_BYTES_PER_SECOND, MAX_ENCODED_SECONDS);
  return Math.ceil((seconds / ENCODE_SPEED) * 1000);
}

/**
 * Writes the first audio stream of `input` alone, as `format` asks (see above), at `output` plus
 * the extension of its container; video, subtitles, data and every other audio stream are left
 * out. Refuses an input that is not in a container of the table, or has no audio stream, as
 * unsupported_source. On failure nothing is left at the output's place and processing_failed
 * (source_too_large past `maxBytes`, storage_full when the disk is full) is thrown.
 */
export async function extractAudio(input: ExtractAudioInput): Promise<AudioFile> {
  const { ffmpeg, output, format, maxBytes, signal } = input;
  await removeOutputs(
    output,
    TARGETS.map((target) => target.container.ext),
  );
  const opened = await inputArgs(input.input, input.declaredType);
  const info = await probe({ ffmpeg, file: input.input, signal, declaredType: input.declaredType });
  const source = info.streams.find((stream) => stream.kind === 'audio');
  if (!source) throw new DownloadError('unsupported_source', 'The source has no audio stream, so there is no sound to keep.');

  const encode = format === 'best' || source.codec === ENCODE[format].codec ? null : ENCODE[format];
  const target = encode ? encode.target : format === 'best' ? (OWN_CONTAINER[source.codec] ?? MKA) : ENCODE[format].target;
  const codecArgs = encode
    ? encode.args
    : // ADTS AAC (from MPEG-TS or a bare .aac) must become MP4's form (see remux).
      ['-c:a', 'copy', ...(source.codec === 'aac' && target === M4A ? ['-bsf:a', 'aac_adtstoasc'] : [])];
  const args = [...opened, ...['-map', '0:a:0', '-vn', '-sn', '-dn'], ...codecArgs, ...sizeLimitArgs(maxBytes)];

  const inputBytes = (await stat(input.input)).size;
  const limit = timeLimitMs(inputBytes) + (encode ? encodeAllowanceMs(info.durationSeconds, inputBytes) : 0);
  const written = await writeOutput(ffmpeg, args, output, target, { timeLimitMs: limit, maxBytes }, signal);
  if (!written.ok) throw new DownloadError('processing_failed', failureLine(written.stderr, [input.input, written.temp]));
  return { ...written.file, audioCodec: encode ? encode.codec : source.codec, reencoded: encode !== null };
}
