// Pages for the tests of the HTML reader in both tiers.

/** A UTF-8 page with this markup in its head and body. */
export function page(head: string, body = ''): string {
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8">${head}</head><body>${body}</body></html>\n`;
}

/** The most of a page the service reads. */
export const PAGE_BYTES = 8 * 1024 * 1024;

/** `unit` repeated to fill the largest page the service reads. */
export const filled = (unit: string, bytes = PAGE_BYTES) => unit.repeat(Math.floor(bytes / unit.length));
