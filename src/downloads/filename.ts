// The stored file's name: the one the client asked for, else the last segment of the URL, cleaned
// of anything that could act as a path or confuse a terminal, with the container's extension.

const UNSAFE = /[\u0000-\u001f\u007f-\u009f/\\:*?"<>|]+/g;
const MAX_LENGTH = 180;

export function cleanFileName(name: string): string {
  return name.replace(UNSAFE, ' ').replace(/\s+/g, ' ').trim().replace(/^\.+/, '').slice(0, MAX_LENGTH).trim();
}

function fromUrl(url: string): string {
  const segment = new URL(url).pathname.split('/').filter(Boolean).pop() ?? '';
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // Not valid percent-encoding: keep it as it came.
  }
  return decoded.replace(/\.[A-Za-z0-9]{1,5}$/, '');
}

export function fileNameFor(requested: string | null, url: string, ext: string): string {
  const base = cleanFileName(requested?.replace(new RegExp(`\\.${ext}$`, 'i'), '') ?? '') || cleanFileName(fromUrl(url)) || 'video';
  return `${base}.${ext}`;
}
