import type { components } from '../../generated/api.ts';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { presentClip } from '../core/clip.ts';
import { parseQuality } from '../core/quality.ts';
import { formatToken } from '../core/token.ts';

export type Download = components['schemas']['Download'];
type FileSubtitles = components['schemas']['File']['subtitles'];

/** The API's view of a row. `baseUrl` is the public origin (and BASE_PATH) that links are built on. */
export function presentDownload(row: Row, baseUrl: string): Download {
  const downloaded = Number(row.downloadedBytes);
  const total = row.totalBytes === null ? null : Number(row.totalBytes);
  const active = row.status === 'downloading';
  const speed = active ? row.speedBytesPerSecond : null;
  const token = row.status === 'completed' && row.tokenSecret ? formatToken(row.id, row.tokenSecret) : null;
  return {
    id: row.id,
    status: row.status,
    url: row.url,
    quality: parseQuality(row.quality),
    mode: row.mode as Download['mode'],
    audio_format: row.audioFormat as Download['audio_format'],
    subtitles: row.subtitles,
    clip: presentClip(row),
    progress: {
      downloaded_bytes: downloaded,
      total_bytes: total,
      percent: total ? Math.min(100, Math.round((downloaded / total) * 1000) / 10) : null,
      speed_bytes_per_second: speed,
      eta_seconds: speed && total && total >= downloaded ? Math.round((total - downloaded) / speed) : null,
    },
    file:
      row.sizeBytes !== null && row.sha256 && row.fileName && row.contentType
        ? {
            filename: row.fileName,
            content_type: row.contentType,
            size_bytes: Number(row.sizeBytes),
            sha256: row.sha256,
            duration_seconds: row.durationSeconds,
            width: row.width,
            height: row.height,
            audio_codec: row.audioCodec,
            video_codec: row.videoCodec,
            subtitles: (row.fileSubtitles as FileSubtitles | null) ?? [],
          }
        : null,
    token,
    download_url: token ? `${baseUrl}/download/${token}` : null,
    expires_at: row.expiresAt?.toISOString() ?? null,
    error:
      row.errorCode && row.errorMessage
        ? { code: row.errorCode as components['schemas']['ErrorCode'], message: row.errorMessage, retryable: row.errorRetryable ?? false }
        : null,
    attempts: row.attempts,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    started_at: row.startedAt?.toISOString() ?? null,
    completed_at: row.completedAt?.toISOString() ?? null,
    callback:
      row.callbackUrl && row.callbackState
        ? { url: row.callbackUrl, state: row.callbackState, attempts: row.callbackAttempts, last_error: row.callbackLastError }
        : null,
    collection: row.collectionId && row.collectionIndex !== null ? { id: row.collectionId, index: row.collectionIndex } : null,
    source: row.sourceKind ? { kind: row.sourceKind as components['schemas']['SourceKind'], extractor: row.sourceExtractor, title: row.sourceTitle } : null,
  };
}
