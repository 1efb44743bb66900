import { open } from 'node:fs/promises';
import { detectKind } from '../src/sources/detect.ts';
import { runFfmpeg } from './support/ffmpeg.ts';
import { mediaPath } from './support/media.ts';

// detectKind on the heads of real media, from the generated clip and from ffmpeg; what the type,
// the path and text bodies say is tested in test/unit/detect.test.ts.

const HEAD_BYTES = 1024;

async function firstBytesOf(file: string): Promise<Buffer> {
  const handle = await open(file);
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** A short test signal encoded by ffmpeg straight to stdout; only its head is kept. */
async function encodedHead(output: string[]): Promise<Buffer> {
  const input = ['-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=0.5', '-f', 'lavfi', '-i', 'sine=duration=0.5'];
  return (await runFfmpeg([...input, ...output, 'pipe:1'])).subarray(0, HEAD_BYTES);
}

const none = Buffer.alloc(0);

describe('detectKind', () => {
  const media: Record<'mp4' | 'ts' | 'webm' | 'mp3', Buffer> = { mp4: none, ts: none, webm: none, mp3: none };

  beforeAll(async () => {
    [media.mp4, media.ts, media.webm, media.mp3] = await Promise.all([
      firstBytesOf(mediaPath('clip.mp4')),
      encodedHead(['-c:v', 'libx264', '-c:a', 'aac', '-f', 'mpegts']),
      encodedHead(['-map', '0:v', '-c:v', 'libvpx', '-f', 'webm']),
      encodedHead(['-map', '1:a', '-f', 'mp3']),
    ]);
  });

  describe('direct media', () => {
    test.each([
      ['mp4', 'video/mp4'],
      ['mp4', 'text/plain; charset=utf-8'],
      ['mp4', 'text/html'],
      ['mp4', null],
      ['ts', 'application/octet-stream'],
      ['ts', 'binary/octet-stream'],
      ['webm', null],
      ['mp3', 'audio/mpeg'],
      ['mp3', 'application/octet-stream'],
    ] as const)('when the body is a real %s and the type is %p, then it is direct', async (name, contentType) => {
      await expect(detectKind({ url: 'http://127.0.0.1/file', contentType, head: media[name] })).resolves.toBe('direct');
    });

    test('when only the first few dozen bytes of an MP4 are known, then it is still direct', async () => {
      await expect(detectKind({ url: 'http://127.0.0.1/file', contentType: null, head: media.mp4.subarray(0, 32) })).resolves.toBe('direct');
    });

    test('when an MP4 is served at a .m3u8 path as a playlist, then the bytes win and it is direct', async () => {
      const input = { url: 'http://127.0.0.1/live/index.m3u8', contentType: 'application/vnd.apple.mpegurl', head: media.mp4 };
      await expect(detectKind(input)).resolves.toBe('direct');
    });

    test.each(['video/mp4', 'VIDEO/WEBM; codecs="vp9"', 'audio/aac', 'video/iso.segment', 'application/ogg'])(
      'when nothing can be read from the body and the type is %p, then it is direct',
      async (contentType) => {
        await expect(detectKind({ url: 'http://127.0.0.1/file', contentType, head: none })).resolves.toBe('direct');
      },
    );
  });
});
