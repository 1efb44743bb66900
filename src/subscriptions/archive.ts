import { InvalidDownloadRequest } from '../downloads/create-rules.ts';
import { MAX_ENTRY_TEXT_CHARS, MAX_EXTRACTOR_CHARS } from '../sources/listing/entries.ts';
import type { SeenEntry } from './repository.ts';

// yt-dlp's --download-archive text: one `<extractor> <id>` per line, the extractor in lower case.
// Imported entries count as seen; the export writes the entries seen that have an id.

/** The entries of an archive's text; throws InvalidDownloadRequest naming the first line that is none. */
export function parseArchive(text: string): SeenEntry[] {
  const entries: SeenEntry[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+) (\S.*)$/u.exec(line);
    // A control character would be stored and exported as it is: no archive yt-dlp writes has one.
    // An id longer than any listed entry's could never match one, and would be a key longer than
    // the database indexes.
    if (!match || /\p{Cc}/u.test(line) || [...match[1]!].length > MAX_EXTRACTOR_CHARS || [...match[2]!].length > MAX_ENTRY_TEXT_CHARS) {
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
