// How long between a subscription's checks, as a person writes it (`90s`, `15m`, `1h`, `1d`,
// `1h30m`, or plain seconds) and as the clients show it. Shared by the CLI and the page.

const UNIT_SECONDS = { d: 86_400, h: 3_600, m: 60, s: 1 } as const;

/** The longest interval the service takes (30 days, the contract's `maximum`). */
export const MAX_INTERVAL_SECONDS = 2_592_000;

/**
 * `90s`, `15m`, `1h`, `1d`, units together largest first (`1h30m`), or plain seconds (`3600`), as
 * seconds; undefined for anything else, and for zero. Upper or lower case, spaces around ignored.
 */
export function parseDuration(text: string): number | undefined {
  const value = text.trim().toLowerCase();
  if (/^\d{1,10}$/.test(value)) return Number(value) || undefined;
  const parts = /^(?:(\d{1,7})d)?(?:(\d{1,8})h)?(?:(\d{1,9})m)?(?:(\d{1,10})s)?$/.exec(value);
  if (!parts || !value) return undefined;
  const [, d = '0', h = '0', m = '0', s = '0'] = parts;
  const seconds = Number(d) * UNIT_SECONDS.d + Number(h) * UNIT_SECONDS.h + Number(m) * UNIT_SECONDS.m + Number(s);
  return seconds || undefined;
}

/** Seconds as the shortest text parseDuration reads back: `1d`, `1h`, `1h30m`, `90s`. */
export function formatInterval(seconds: number): string {
  let left = Math.max(0, Math.round(seconds));
  if (left === 0) return '0s';
  let text = '';
  for (const [unit, size] of Object.entries(UNIT_SECONDS)) {
    if (left >= size) {
      text += `${Math.floor(left / size)}${unit}`;
      left %= size;
    }
  }
  return text;
}

/** How far a moment is from now, coarsely, as a table or a card shows it: `in 55m`, `3h ago`, `just now`. */
export function formatRelative(at: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(at) - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 5) return 'just now';
  const amount =
    size < 60 ? `${size}s` : size < 3_600 ? `${Math.floor(size / 60)}m` : size < 172_800 ? `${Math.floor(size / 3_600)}h` : `${Math.floor(size / 86_400)}d`;
  return seconds > 0 ? `in ${amount}` : `${amount} ago`;
}
