import { InvalidDownloadRequest } from '../downloads/create-rules.ts';
import type { SeenEntry } from './repository.ts';

// yt-dlp's --download-archive text: one `<extractor> <id>` per line, the extractor in lower case.
// Imported entries count as seen; the export writes the entries seen that have an id.

/** The longest line taken, in code points: as long as the longest key a listing makes (an extractor of 100, an id of 500), so that every key fits PostgreSQL's index. */
const MAX_LINE_CHARS = 601;

/** The entries of an archive's text; throws InvalidDownloadRequest naming the first line that is none. */
export function parseArchive(text: string): SeenEntry[] {
  const entries: SeenEntry[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+) (\S.*)$/u.exec(line);
    // A control character would be stored and exported as it is: no archive yt-dlp writes has one.
    if ([...line].length > MAX_LINE_CHARS) {
      throw new InvalidDownloadRequest(
        '/body/archive',
        `line ${i + 1} is longer than ${MAX_LINE_CHARS} characters`,
        `Line ${i + 1} of archive is longer than any entry of a download archive (${MAX_LINE_CHARS} characters).`,
      );
    }
    if (!match || /\p{Cc}/u.test(line)) {
      throw new InvalidDownloadRequest(
        '/body/archive',
        `line ${i + 1} is not "<extractor> <id>"`,
        `Line ${i + 1} of archive is not an entry of a yt-dlp download archive ("<extractor> <id>", such as "youtube dQw4w9WgXcQ").`,
      );
    }
    entries.push({ key: `${match[1]!.toLowerCase()} ${match[2]}`, archived: true });
  }
  return entries;
}

/** The archive's text of `keys`, one per line. */
export function formatArchive(keys: string[]): string {
  return keys.map((key) => `${key}\n`).join('');
}
