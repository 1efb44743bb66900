import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { completedDownload, savedFile } from './support/api.ts';
import { decodeErrors, frameHashes, runFfmpeg } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';

// A clip of a direct MP4 fetched in ranges, whose every track an empty edit delays by 3 s (as
// ffmpeg writes a file whose streams start late, `-itsoffset 3`): ffmpeg counts the clip's times
// from where the media starts, 3 s in, so the samples fetched must be those, or the cut reads holes.
// The media: 10 s with a keyframe every second, its picture the source's.

const { app, source } = useService();
let scratch: string;
let media: { plain: string; late: string };

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-clip-edit-lists-'));
  media = { plain: path.join(scratch, 'plain.mp4'), late: path.join(scratch, 'late.mp4') };
  await runFfmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=10', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=10'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '10', '-keyint_min', '10', '-sc_threshold', '0'],
    ...['-c:a', 'aac', '-b:a', '32k', '-shortest', '-movflags', '+faststart', media.plain],
  ]);
  await runFfmpeg(['-itsoffset', '3', '-i', media.plain, '-map', '0', '-c', 'copy', '-movflags', '+faststart', media.late]);
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

test('when an MP4 whose tracks an empty edit delays is clipped in ranges, then the file is whole and starts at the keyframe at or before the start, counted from the media start', async () => {
  const done = await completedDownload(app, { url: source.file('/clip-edit-lists/late.mp4', media.late), clip: { start_seconds: 5.5, end_seconds: 7.5 } });
  // From the keyframe at 5 s to 7.5 s.
  expect(done.file!.duration_seconds).toBeGreaterThanOrEqual(2);
  expect(done.file!.duration_seconds).toBeLessThanOrEqual(2.65);
  const file = await savedFile(app.http, done, scratch);
  expect(await decodeErrors(file)).toBe('');
  expect((await frameHashes(file))[0]).toBe((await frameHashes(media.plain))[50]);
  // Only the clip's samples were fetched, not the whole file.
  const sent = source.requestsFor('/clip-edit-lists/late.mp4').filter((request) => request.range !== undefined);
  expect(sent.length).toBeGreaterThan(0);
});
