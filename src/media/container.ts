import { fileTypeFromFile } from 'file-type';

export type Container = { mime: string; ext: string };

/**
 * The container of a file, from its first bytes; a declared `video/*` or `audio/*` type is the
 * fallback for containers the signatures do not know. Null when the file is not media.
 */
export async function detectContainer(file: string, declaredType: string | null): Promise<Container | null> {
  const sniffed = await fileTypeFromFile(file);
  if (sniffed && /^(video|audio)\//.test(sniffed.mime)) return { mime: sniffed.mime, ext: sniffed.ext };
  if (sniffed) return null;
  const declared = declaredType?.split(';')[0]?.trim().toLowerCase();
  if (declared && /^(video|audio)\/[\w.+-]+$/.test(declared)) return { mime: declared, ext: declared.split('/')[1]!.replace(/^x-/, '') };
  return null;
}
