import type { types } from 'hls-parser';
import { DownloadError } from '../../core/errors.ts';
import { keySystemName } from '../key-systems.ts';
import type { SegmentKey } from '../types.ts';
import { resolveUri } from './urls.ts';

// Whole-segment AES-128 is plain encryption with a key anyone holding the playlist may fetch, so it
// is decrypted; every other method or key system is DRM, which this service does not circumvent.

/** Throws `drm_protected` for any key that is neither METHOD=NONE nor AES-128 with the identity key format. */
export function refuseDrm(key: types.Key): void {
  const format = key.format ?? 'identity';
  if (format !== 'identity') {
    throw new DownloadError(
      'drm_protected',
      `The stream is protected by ${keySystemName(format) ?? 'DRM'} (KEYFORMAT="${format}"); DRM-protected streams are not supported.`,
    );
  }
  if (key.method !== 'NONE' && key.method !== 'AES-128') {
    throw new DownloadError('drm_protected', `The stream is encrypted with METHOD=${key.method}, a DRM scheme; DRM-protected streams are not supported.`);
  }
}

/** RFC 8216 5.2: without an IV attribute, the IV is the media sequence number, big-endian in 16 bytes. */
function sequenceIv(mediaSequence: number): string {
  return BigInt(mediaSequence).toString(16).padStart(32, '0');
}

/** The decryption a segment (or init section) needs, or undefined when it is in the clear. */
export function segmentKey(key: types.Key | null | undefined, mediaSequence: number, playlistUrl: string): SegmentKey | undefined {
  if (!key) return undefined;
  refuseDrm(key);
  if (key.method === 'NONE') return undefined;
  if (!key.uri) throw new DownloadError('unsupported_source', `An AES-128 EXT-X-KEY in ${playlistUrl} has no URI.`);
  // hls-parser hands the IV over as a Uint8Array, whatever its declaration says.
  const iv = key.iv ? Buffer.from(new Uint8Array(key.iv)).toString('hex') : sequenceIv(mediaSequence);
  if (iv.length !== 32) throw new DownloadError('unsupported_source', `An EXT-X-KEY in ${playlistUrl} has an IV that is not 128 bits.`);
  return { method: 'AES-128', uri: resolveUri(key.uri, playlistUrl), iv };
}
