import { fileTypeFromFile } from 'file-type';

export type Container = { mime: string; ext: string };

/** Media containers that file-type names under application/. */
const MEDIA_APPLICATION_TYPES = new Set(['application/ogg', 'application/mxf', 'application/vnd.ms-asf', 'application/vnd.rn-realmedia']);

/** The media type without parameters, lower-cased; '' when there is none. */
export function essence(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export function isMedia(type: string): boolean {
  return type.startsWith('video/') || type.startsWith('audio/') || MEDIA_APPLICATION_TYPES.has(type);
}

/**
 * The container of a file, from its first bytes; a declared media type is the fallback for
 * containers the signatures do not know. Null when the file is not media, by the
 * same rule that the first look at a response uses, so that a file taken for media is not refused.
 */
export async function detectContainer(file: string, declaredType: string | null): Promise<Container | null> {
  const sniffed = await fileTypeFromFile(file);
  if (sniffed) return isMedia(sniffed.mime) ? { mime: sniffed.mime, ext: sniffed.ext } : null;
  const declared = essence(declaredType);
  return isMedia(declared) ? { mime: declared, ext: declared.split('/')[1]!.replace(/^x-/, '') } : null;
}
