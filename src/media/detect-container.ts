import { lstat } from 'node:fs/promises';
import { fileTypeFromFile } from 'file-type';
import { containerOfDeclared, containerOfSniffed, type Container } from './containers.ts';

/** Media containers that file-type names under application/. */
const MEDIA_APPLICATION_TYPES = new Set(['application/ogg', 'application/mxf', 'application/vnd.ms-asf', 'application/vnd.rn-realmedia']);

/** The media type without parameters, lower-cased; '' when there is none. */
export function essence(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Whether a response labelled `type` is worth fetching as a file; what the file is gets decided by `detectContainer`. */
export function isMedia(type: string): boolean {
  return type.startsWith('video/') || type.startsWith('audio/') || MEDIA_APPLICATION_TYPES.has(type);
}

/**
 * The container of a downloaded file: the one its first bytes name, else, when they name nothing,
 * the one its declared type names. Null when neither is in the table, and for anything but a
 * regular file (a FIFO or a device would keep a reader waiting, or reading, for ever).
 */
export async function detectContainer(file: string, declaredType: string | null): Promise<Container | null> {
  if (!(await lstat(file)).isFile()) return null;
  const sniffed = await fileTypeFromFile(file);
  return sniffed ? containerOfSniffed(sniffed.mime) : containerOfDeclared(essence(declaredType));
}
