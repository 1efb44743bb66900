// The media every test run can rely on, as ffmpeg arguments (without the output). They are part of
// the cache key, so editing one regenerates the files on the next run.

const h264Aac = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart'];

export const mediaRecipes = {
  // Small and quick to fetch: the common case for end-to-end tests.
  'clip.mp4': {
    args: [
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=320x240:rate=25:duration=3',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=44100:duration=3',
      ...h264Aac,
      '-b:a',
      '64k',
      '-shortest',
    ],
    minBytes: 10_000,
  },
  // Large enough that a transfer can be cut, stalled or resumed part-way through.
  'big.mp4': {
    args: [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=640x480:rate=25:duration=8',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=330:sample_rate=44100:duration=8',
      ...h264Aac,
      '-b:v',
      '3M',
      '-maxrate',
      '3M',
      '-bufsize',
      '1M',
      '-b:a',
      '128k',
      '-shortest',
    ],
    minBytes: 2 * 1024 * 1024,
  },
  // A keyframe every second (25 fps, -g 25) for 10 s: a clip's cut lands within a second of its start.
  'keyframes.mp4': {
    args: [
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=320x240:rate=25:duration=10',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=44100:duration=10',
      ...h264Aac,
      '-g',
      '25',
      '-keyint_min',
      '25',
      '-sc_threshold',
      '0',
      '-b:a',
      '64k',
      '-shortest',
    ],
    minBytes: 20_000,
  },
  // Two minutes, small: for what asks for a part past the first minute (the README's clip of 1:30 to 2:00).
  'talk.mp4': {
    args: [
      ...['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=5:duration=125'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=125'],
      ...h264Aac,
      ...['-g', '25', '-b:a', '32k', '-shortest'],
    ],
    minBytes: 20_000,
  },
} as const satisfies Record<string, { args: readonly string[]; minBytes: number }>;

export type MediaName = keyof typeof mediaRecipes;
