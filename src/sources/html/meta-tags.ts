/** A `<meta>` keyed by its `property` (Open Graph) or `name` (Twitter, and sloppy Open Graph). */
export type MetaTag = { key: string; content: string };

/** The tag a `<meta>` with these attributes makes, if it has both a key and a content. */
export function metaTag(attributes: ReadonlyMap<string, string>): MetaTag | null {
  const key = attributes.get('property') ?? attributes.get('name');
  const content = attributes.get('content');
  return key && content ? { key: key.trim().toLowerCase(), content: content.trim() } : null;
}

export function metaContents(metas: MetaTag[], key: string): string[] {
  return metas.filter((meta) => meta.key === key).map((meta) => meta.content);
}

type VideoGroup = Partial<Record<'og:video:secure_url' | 'og:video:url' | 'og:video' | 'og:video:type', string>>;
const GROUP_KEYS = new Set<string>(['og:video:secure_url', 'og:video:url', 'og:video', 'og:video:type']);
const URL_KEYS = ['og:video:secure_url', 'og:video:url', 'og:video'] as const;

// Sites such as video hosts put their embeddable player page in og:video and say so in
// og:video:type; such a page is not a stream.
const PLAYER_TYPE = /^\s*(?:text\/html|application\/xhtml\+xml|application\/x-shockwave-flash)\b/i;

/**
 * Open Graph video URLs, secure_url first, then url, then og:video. Each og:video's structured
 * properties follow it, so a key that the current video already has begins the next video.
 */
export function openGraphVideoUrls(metas: MetaTag[]): string[] {
  const groups: VideoGroup[] = [];
  for (const { key, content } of metas) {
    if (!GROUP_KEYS.has(key)) continue;
    const field = key as keyof VideoGroup;
    let current = groups.at(-1);
    if (!current || current[field] !== undefined) groups.push((current = {}));
    current[field] = content;
  }
  const streams = groups.filter((group) => !PLAYER_TYPE.test(group['og:video:type'] ?? ''));
  return URL_KEYS.flatMap((key) => streams.flatMap((group) => group[key] ?? []));
}
