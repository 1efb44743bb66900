import { DownloadError } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { Quality } from '../../core/quality.ts';
import type { SiteFormat, SiteInfo } from './ytdlp.ts';

// Which of yt-dlp's formats the service fetches for a quality: yt-dlp's `bv*+ba/b`, i.e. the best
// picture (a format with video, with or without sound) and, when it has no sound, the best
// audio-only format; a site without separate audio gets its best muxed format.

/** How a chosen format is fetched: a file over HTTP, or an HLS or DASH stream read by the service's own readers. */
export type FetchKind = 'direct' | 'hls' | 'dash';

export type Chosen = {
  kind: FetchKind;
  /** The file, the HLS media playlist, or the DASH manifest. */
  url: string;
  /** For HLS and DASH: the manifest the format was listed in (the master playlist, the MPD). */
  manifest_url?: string;
  /** The headers the site wants sent with every request for this format, sanitised. */
  headers: Record<string, string>;
  ext: string | null;
  height: number | null;
  format_id: string | null;
};

/** `video` + `audio` (to merge), `muxed` alone, `video` alone (no sound anywhere), or `audio` alone (an audio-only site). */
export type FormatChoice = { kind: FetchKind; video?: Chosen; audio?: Chosen; muxed?: Chosen };

const KINDS = new Map<string, FetchKind>([
  ['http', 'direct'],
  ['https', 'direct'],
  ['m3u8', 'hls'],
  ['m3u8_native', 'hls'],
  ['http_dash_segments', 'dash'],
  ['dash', 'dash'],
]);

/**
 * `mode` narrows it as it narrows a manifest: `audio` takes the best audio-only format alone when
 * there is one, `mute` the best picture without sound when there is one; else the muxed format,
 * whose unwanted stream is dropped afterwards.
 */
export function chooseFormats(info: SiteInfo, quality: Quality, mode: Mode = 'video'): FormatChoice {
  const all = formatsOf(info).filter((format) => !isImage(format));
  const usable = all.filter((format) => kindOf(format) !== undefined && format.has_drm !== true);
  if (usable.length === 0) {
    if (all.some((format) => format.has_drm === true)) throw new DownloadError('drm_protected', 'Every format the site offers is DRM-protected.');
    throw new DownloadError('unsupported_source', 'The site offers no format the server can fetch (only other protocols than HTTP, HLS and DASH).');
  }

  const muxed = usable.filter((format) => hasVideo(format) && hasAudio(format));
  const videoOnly = usable.filter((format) => hasVideo(format) && !hasAudio(format));
  const audioOnly = usable.filter((format) => !hasVideo(format));
  // Separate audio to merge with: any picture will do. None: a picture with its own sound, if any has.
  const pictures = audioOnly.length > 0 ? [...muxed, ...videoOnly] : muxed.length > 0 ? muxed : videoOnly;

  if (mode === 'audio' && audioOnly.length > 0) return only('audio', pick(audioOnly, 'best')!);
  if (mode === 'mute' && videoOnly.length > 0) return only('video', pick(videoOnly, quality)!);
  const picture = pick(mode === 'audio' || mode === 'mute' ? (muxed.length > 0 ? muxed : pictures) : pictures, quality);
  if (!picture) return only('audio', pick(audioOnly, quality)!);
  if (hasAudio(picture)) return only('muxed', picture);
  if (audioOnly.length === 0) return only('video', picture);
  const sameKind = audioOnly.filter((format) => kindOf(format) === kindOf(picture));
  const audio = pick(sameKind.length > 0 ? sameKind : audioOnly, quality === 'worst' ? 'worst' : 'best')!;
  return { kind: kindOf(picture)!, video: chosen(picture), audio: chosen(audio) };
}

function only(role: 'video' | 'audio' | 'muxed', format: SiteFormat): FormatChoice {
  return { kind: kindOf(format)!, [role]: chosen(format) };
}

/** The formats, or the result itself when yt-dlp gave a single file (no `formats` list). */
function formatsOf(info: SiteInfo): SiteFormat[] {
  if (info.formats?.length) return info.formats;
  return info.url ? [{ ...info, url: info.url }] : [];
}

function kindOf(format: SiteFormat): FetchKind | undefined {
  const urls = [format.url, format.manifest_url ?? format.url];
  return urls.every((url) => /^https?:\/\//i.test(url)) ? KINDS.get(format.protocol ?? '') : undefined;
}

// An unknown codec (null, as the generic extractor leaves it) may be there.
const hasVideo = (format: SiteFormat) => format.vcodec !== 'none';
const hasAudio = (format: SiteFormat) => format.acodec !== 'none';
/** Storyboards and thumbnails that sites list as formats. */
const isImage = (format: SiteFormat) => (!hasVideo(format) && !hasAudio(format)) || format.ext === 'mhtml';

/**
 * Smallest to largest: by height (unknown below any known), then bitrate, then yt-dlp's own order
 * (which lists worse first). `best`: the last; `worst`: the first; a height: the best of those no
 * taller (an unknown height fits), or the smallest when none fits.
 */
function pick(formats: SiteFormat[], quality: Quality): SiteFormat | undefined {
  const ordered = [...formats].sort((a, b) => (a.height ?? -1) - (b.height ?? -1) || (a.tbr ?? -1) - (b.tbr ?? -1));
  if (quality === 'worst') return ordered[0];
  if (quality === 'best') return ordered.at(-1);
  return ordered.filter((format) => (format.height ?? -1) <= quality).at(-1) ?? ordered[0];
}

function chosen(format: SiteFormat): Chosen {
  const kind = kindOf(format)!;
  return {
    kind,
    url: format.url,
    ...(kind === 'direct' ? {} : { manifest_url: format.manifest_url ?? format.url }),
    headers: safeHeaders(format.http_headers ?? {}),
    ext: format.ext ?? null,
    height: format.height ?? null,
    format_id: format.format_id ?? null,
  };
}

const KEPT_HEADERS = new Set(['user-agent', 'referer', 'origin', 'cookie', 'accept', 'accept-language']);
const MAX_HEADERS = 20;
const MAX_HEADER_BYTES = 4096;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// What Node would refuse to send, CR, LF and NUL among it.
const UNSENDABLE = /[^\t\x20-\x7e\x80-\xff]/;

/** Only the headers a site may have a reason to want (and `X-` ones), each a valid header of bounded size; at most 20, one per name. */
export function safeHeaders(headers: Record<string, string>): Record<string, string> {
  const kept = new Map<string, [string, string]>();
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (kept.size >= MAX_HEADERS || kept.has(lower)) continue;
    // X- headers a site asks for (tokens, versions), but none that speaks for the service's own address.
    if (!KEPT_HEADERS.has(lower) && (!lower.startsWith('x-') || /^x-(?:forwarded|real-ip|client-ip)/.test(lower))) continue;
    if (!TOKEN.test(name) || UNSENDABLE.test(value) || Buffer.byteLength(name) + Buffer.byteLength(value) > MAX_HEADER_BYTES) continue;
    kept.set(lower, [name, value]);
  }
  return Object.fromEntries(kept.values());
}
