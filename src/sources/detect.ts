import { fileTypeFromBuffer } from 'file-type';
import { essence, isMedia } from '../media/detect-container.ts';

// Servers label media carelessly (an MP4 as text/plain, a playlist as application/octet-stream), so
// the first bytes of the body are asked first and the declared type and the URL only break ties.

/** What a response is: a media file, an HLS playlist, a DASH manifest, or a page. */
export type ResponseKind = 'direct' | 'hls' | 'dash' | 'page';

const HLS_TYPES = new Set(['application/vnd.apple.mpegurl', 'application/x-mpegurl', 'audio/mpegurl', 'audio/x-mpegurl']);
const DASH_TYPES = new Set(['application/dash+xml']);
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const FEED_TYPES = new Set(['application/rss+xml', 'application/atom+xml']);
/** Types that say nothing about the body: only the bytes can tell. */
const UNKNOWN_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream']);

function isTextish(type: string): boolean {
  return UNKNOWN_TYPES.has(type) || type.startsWith('text/') || type === 'application/xml' || type.endsWith('+xml');
}

function pathEndsWith(url: string, extension: string): boolean {
  return URL.canParse(url) && new URL(url).pathname.toLowerCase().endsWith(extension);
}

/**
 * The text from the first markup element on: past a BOM (trim removes U+FEFF too), whitespace,
 * the XML declaration and comments, which may all come before an MPD's or an XHTML page's root.
 */
function firstElement(text: string): string {
  let rest = text.trim();
  for (;;) {
    const prolog = /^(?:<\?[\s\S]*?\?>|<!--[\s\S]*?-->)/.exec(rest);
    if (!prolog) return rest;
    rest = rest.slice(prolog[0].length).trim();
  }
}

function kindFromText(head: Buffer): ResponseKind | null {
  const text = head.toString('utf8');
  if (text.trim().startsWith('#EXTM3U')) return 'hls';
  const markup = firstElement(text);
  if (/^<MPD[\s>]/.test(markup)) return 'dash';
  if (/^<(?:!doctype\s+html|html)[\s>]/i.test(markup)) return 'page';
  return null;
}

function kindFromDeclaredType(type: string, url: string): ResponseKind | null {
  if (HLS_TYPES.has(type)) return 'hls';
  if (DASH_TYPES.has(type)) return 'dash';
  if (HTML_TYPES.has(type)) return 'page';
  if (isMedia(type)) return 'direct';
  if (isTextish(type) && pathEndsWith(url, '.m3u8')) return 'hls';
  if (isTextish(type) && pathEndsWith(url, '.mpd')) return 'dash';
  return null;
}

/**
 * What kind of source a response is, from its URL, its declared Content-Type and the first bytes
 * of its body (about 1 KiB; fewer is fine). Null when it is nothing a download can be made from.
 */
export async function detectKind(input: { url: string; contentType: string | null; head: Buffer }): Promise<ResponseKind | null> {
  const fromText = kindFromText(input.head);
  if (fromText) return fromText;
  const sniffed = await fileTypeFromBuffer(input.head);
  if (sniffed) {
    if (isMedia(sniffed.mime)) return 'direct';
    // Recognisable bytes of something else (an image, an archive) are not media, whatever the
    // label says; XML is only recognised as XML, and may still be a manifest past the first KiB.
    if (sniffed.mime !== 'application/xml') return null;
  }
  return kindFromDeclaredType(essence(input.contentType), input.url);
}

/**
 * Whether a response is an RSS or Atom feed (which only a collection reads): by its root element or
 * the name its DOCTYPE declares, else by its declared type. Ask `detectKind` first: media bytes win.
 */
export function isFeed(input: { contentType: string | null; head: Buffer }): boolean {
  const markup = firstElement(input.head.toString('utf8'));
  return /^<(?:!DOCTYPE\s+)?(?:rss|feed|rdf:RDF)[\s>]/i.test(markup) || FEED_TYPES.has(essence(input.contentType));
}
