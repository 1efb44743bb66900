import { StringDecoder } from 'node:string_decoder';
import { SaxesParser, type SaxesAttributeNS, type SaxesTagNS } from 'saxes';
import { DownloadError } from '../../core/errors.ts';
import { discard, transportError, type SourceResponse } from '../../net/guarded-client.ts';
import { MAX_FEED_BYTES } from '../document-limits.ts';
import { entryUrl, type EntryList } from './entries.ts';
import { durationOf } from './feed-duration.ts';

// An RSS 2.0 or Atom feed, parsed as it arrives (saxes, a streaming XML parser) and read only until
// one entry past the limit is known: a podcast of 100,000 items costs what its first few cost. The
// feed is an attacker's: saxes expands no entity but the five of XML and the character references,
// reads no DTD, fetches nothing; an undefined entity stays as written. Well-formedness errors are
// passed over, as feed readers do, since only a few elements are looked at.

/** Namespaces whose elements are read, by their usual prefix: elements are matched as `prefix:name`. */
const NAMESPACES = new Map([
  ['http://www.w3.org/2005/Atom', 'atom'],
  ['http://search.yahoo.com/mrss/', 'media'],
  ['http://search.yahoo.com/mrss', 'media'],
  ['http://www.itunes.com/dtds/podcast-1.0.dtd', 'itunes'],
]);

/** The elements of an item, and of a feed, whose text is read. */
const ITEM_TEXT = new Set(['title', 'atom:title', 'guid', 'atom:id', 'itunes:duration']);
const FEED_TITLES = new Set(['title', 'atom:title']);
const FEED_ELEMENTS = new Set(['channel', 'atom:feed']);
const ITEMS = new Set(['item', 'atom:entry']);

/** Text read of one element at most: a title is a label of a few hundred characters, and the rest is dropped. */
const MAX_TEXT_CHARS = 8192;
/**
 * An element nested deeper than this ends the reading, as the byte limit does: no feed nests what
 * is read more than a few levels, and saxes resolves each element's namespace by walking every
 * open element, so a feed nested 20,000 deep would hold the event loop for seconds.
 */
const MAX_DEPTH = 32;

/** Thrown out of saxes's write by the element past MAX_DEPTH: nothing more of the feed is parsed. */
class TooDeep extends Error {}
const TOO_DEEP = ` before its elements nest ${MAX_DEPTH} deep`;

type Item = {
  title: string | null;
  id: string | null;
  duration: string | null;
  /** The first usable enclosure (RSS) or enclosure link (Atom). */
  enclosure: string | null;
  /** The first usable Media RSS content, used when there is no enclosure. */
  media: { url: string; duration: string | null } | null;
};

/** The name an element is matched by: its namespace's usual prefix and its local name; an unknown or unbound prefix as written. */
function keyOf(tag: SaxesTagNS): string {
  const prefix = NAMESPACES.get(tag.uri);
  if (prefix !== undefined) return `${prefix}:${tag.local}`;
  return tag.uri === '' ? tag.name : `{${tag.uri}}${tag.local}`;
}

function attribute(tag: SaxesTagNS, name: string): string | undefined {
  return (tag.attributes[name] as SaxesAttributeNS | undefined)?.value;
}

/**
 * Whether an enclosure of this declared type or Media RSS medium may be media: declared images,
 * documents and text are a post's pictures and attachments. An undeclared one may be anything.
 */
function mayBeMedia(type: string | undefined, medium: string | undefined): boolean {
  const declared = type?.trim().toLowerCase() ?? '';
  if (declared.startsWith('image/') || declared.startsWith('text/') || declared === 'application/pdf') return false;
  const kind = medium?.trim().toLowerCase();
  return kind === undefined || kind === '' || kind === 'video' || kind === 'audio';
}

/** The feed's parse: its title, and each item with media added to `entries` as its element ends. */
class FeedParse {
  readonly parser = new SaxesParser({ xmlns: true, position: false });
  title: string | null = null;
  private readonly open: string[] = [];
  private depth = 0;
  private item: { depth: number; fields: Item } | null = null;
  private text: { depth: number; key: string; value: string } | null = null;

  constructor(
    private readonly feedUrl: string,
    private readonly entries: EntryList,
  ) {
    this.parser.on('error', () => {});
    this.parser.on('opentag', (tag) => this.opened(tag));
    this.parser.on('closetag', () => this.closed());
    this.parser.on('text', (text) => this.gather(text));
    this.parser.on('cdata', (text) => this.gather(text));
  }

  private opened(tag: SaxesTagNS): void {
    const parent = this.open.at(-1);
    const key = keyOf(tag);
    const depth = this.depth++;
    if (depth >= MAX_DEPTH) throw new TooDeep();
    this.open.push(key);
    if (this.text) return;
    if (this.item) {
      this.itemElement(tag, key, depth);
    } else if (ITEMS.has(key)) {
      this.item = { depth, fields: { title: null, id: null, duration: null, enclosure: null, media: null } };
    } else if (FEED_TITLES.has(key) && this.title === null && parent !== undefined && FEED_ELEMENTS.has(parent)) {
      this.text = { depth, key: 'feed-title', value: '' };
    }
  }

  private itemElement(tag: SaxesTagNS, key: string, depth: number): void {
    const fields = this.item!.fields;
    // Only the item's own elements: a title inside its media:group is not the item's.
    if (ITEM_TEXT.has(key) && depth === this.item!.depth + 1) this.text = { depth, key, value: '' };
    const url = (name: string) => {
      const value = attribute(tag, name);
      return value === undefined ? null : entryUrl(value, this.feedUrl);
    };
    const typed = mayBeMedia(attribute(tag, 'type'), attribute(tag, 'medium'));
    if (key === 'enclosure' && fields.enclosure === null && typed) fields.enclosure = url('url');
    if (key === 'atom:link' && fields.enclosure === null && attribute(tag, 'rel')?.trim().toLowerCase() === 'enclosure' && typed) {
      fields.enclosure = url('href');
    }
    if (key === 'media:content' && fields.media === null && typed) {
      const media = url('url');
      if (media !== null) fields.media = { url: media, duration: attribute(tag, 'duration') ?? null };
    }
  }

  private gather(text: string): void {
    if (this.text && this.text.value.length < MAX_TEXT_CHARS) this.text.value += text.slice(0, MAX_TEXT_CHARS - this.text.value.length);
  }

  private closed(): void {
    const depth = --this.depth;
    this.open.pop();
    if (this.text?.depth === depth) {
      const { key, value } = this.text;
      this.text = null;
      if (key === 'feed-title') this.title = value;
      else if (this.item) this.itemText(key, value);
    }
    if (this.item?.depth === depth) {
      const { fields } = this.item;
      this.item = null;
      const url = fields.enclosure ?? fields.media?.url ?? null;
      const duration = durationOf(fields.duration) ?? durationOf(fields.media?.duration ?? null);
      this.entries.add({ url, id: fields.id, title: fields.title, durationSeconds: duration });
    }
  }

  /** Parses more of the feed; false when it nests too deep to be read further. */
  write(text: string, last = false): boolean {
    try {
      this.parser.write(text);
      if (last) this.parser.close();
      return true;
    } catch (error) {
      if (error instanceof TooDeep) return false;
      throw error;
    }
  }

  private itemText(key: string, value: string): void {
    const fields = this.item!.fields;
    if ((key === 'title' || key === 'atom:title') && fields.title === null) fields.title = value;
    if ((key === 'guid' || key === 'atom:id') && fields.id === null) fields.id = value;
    if (key === 'itunes:duration' && fields.duration === null) fields.duration = value;
  }
}

/**
 * Reads the feed in `response` (its body not yet read) into `entries` until they are full, the feed
 * ends, or MAX_FEED_BYTES were read; then lets go of the response. `more` when the feed was left
 * before its end. Throws `unsupported_source` when no item with media was found, unless `mayBeEmpty`
 * and the feed was read to its end.
 */
export async function readFeed(
  response: SourceResponse,
  entries: EntryList,
  signal: AbortSignal,
  mayBeEmpty: boolean,
): Promise<{ title: string | null; more: boolean }> {
  const parse = new FeedParse(response.url, entries);
  const decoder = new StringDecoder('utf8');
  let bytes = 0;
  // Where the reading stopped short of the feed's end, when a bound stopped it.
  let cut: string | null = null;
  try {
    for await (const chunk of response.body) {
      signal.throwIfAborted();
      const buffer = chunk as Buffer;
      bytes += buffer.length;
      if (bytes > MAX_FEED_BYTES) {
        cut = ` in its first ${MAX_FEED_BYTES} bytes`;
        break;
      }
      response.floor.arrived(buffer.length);
      if (!parse.write(decoder.write(buffer))) cut = TOO_DEEP;
      if (cut !== null || entries.full) break;
    }
    if (cut === null && !entries.full && !parse.write(decoder.end(), true)) cut = TOO_DEEP;
  } catch (error) {
    throw transportError(error, signal);
  } finally {
    // What is not read of a feed left early is not wanted: its connection goes.
    discard(response);
  }
  if (entries.size === 0 && (cut !== null || !mayBeEmpty)) {
    throw new DownloadError('unsupported_source', `The feed at ${response.url} has no item with a video or audio file${cut ?? ''}.`);
  }
  return { title: parse.title, more: cut !== null || entries.full };
}
