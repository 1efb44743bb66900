// How each HLS fixture is made: ffmpeg arguments run inside the fixture's own directory, plus the
// files written there first (key material, and master playlists, which this ffmpeg cannot write:
// its var_stream_map/master_pl_name crashes). They are part of the cache key, so editing one
// regenerates the fixtures on the next run.

/** The AES-128 key of the encrypted fixtures: 16 ASCII characters are 16 key bytes. */
export const HLS_KEY = 'hls-fixture-key!';
/** The IV written into the `aes-iv` playlist, as hex. */
export const HLS_EXPLICIT_IV = '00112233445566778899aabbccddeeff';
/** The first media sequence number of `aes-sequence`: not 0, so an index is not mistaken for it. */
export const HLS_SEQUENCE_START = 3;
/** The variants of `master`, in the order its playlist lists them (deliberately not sorted). */
export const HLS_VARIANTS = [
  { dir: 'v360', width: 640, height: 360, bandwidth: 700_000 },
  { dir: 'v720', width: 1280, height: 720, bandwidth: 1_500_000 },
  { dir: 'v180', width: 320, height: 180, bandwidth: 300_000 },
] as const;

const SECONDS = 4;
const picture = (size: string) => ['-f', 'lavfi', '-i', `testsrc=size=${size}:rate=25:duration=${SECONDS}`];
const tone = (frequency: number) => ['-f', 'lavfi', '-i', `sine=frequency=${frequency}:sample_rate=44100:duration=${SECONDS}`];
// A keyframe every second, so that every one-second segment starts with one.
const h264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-keyint_min', '25', '-sc_threshold', '0'];
const aac = ['-c:a', 'aac', '-b:a', '64k'];
const muxed = [...picture('320x180'), ...tone(440), ...h264, ...aac];
const hlsVod = (playlist: string, segments: string, ...options: string[]) => [
  '-f',
  'hls',
  '-hls_time',
  '1',
  '-hls_playlist_type',
  'vod',
  ...options,
  '-hls_segment_filename',
  segments,
  playlist,
];

const masterPlaylist = [
  '#EXTM3U',
  '#EXT-X-VERSION:3',
  ...HLS_VARIANTS.flatMap(({ dir, width, height, bandwidth }) => [
    `#EXT-X-STREAM-INF:BANDWIDTH=${bandwidth},RESOLUTION=${width}x${height}`,
    `${dir}/index.m3u8`,
  ]),
  '',
].join('\n');

// The DEFAULT=YES rendition is the second, so that "the first" and "the default" differ.
const audioRenditionMaster = [
  '#EXTM3U',
  '#EXT-X-VERSION:3',
  '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="English",LANGUAGE="en",AUTOSELECT=YES,DEFAULT=NO,URI="audio-en/index.m3u8"',
  '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="Deutsch",LANGUAGE="de",AUTOSELECT=YES,DEFAULT=YES,URI="audio-de/index.m3u8"',
  '#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,AUDIO="audio"',
  'video/index.m3u8',
  '',
].join('\n');

export type HlsRecipe = {
  /** The playlist to start from, relative to the fixture's directory. */
  playlist: string;
  /** Subdirectories ffmpeg writes into (it does not create them). */
  dirs?: readonly string[];
  files?: Readonly<Record<string, string>>;
  args: readonly string[];
  /** Encrypt every segment ffmpeg wrote with this key file and its media sequence number as the IV, and name the key, without an IV, in the playlist. */
  encryptBySequence?: string;
};

// The encrypted fixtures are made exactly like `ts` (same picture, tone and encoder settings), so
// their segments decrypt to the bytes of its segments.
export const hlsRecipes = {
  ts: { playlist: 'index.m3u8', args: [...muxed, ...hlsVod('index.m3u8', 'seg%d.ts')] },
  'aes-iv': {
    playlist: 'index.m3u8',
    // key-info.txt: the key URI for the playlist, the key file, the IV.
    files: { 'aes.key': HLS_KEY, 'key-info.txt': `aes.key\naes.key\n${HLS_EXPLICIT_IV}\n` },
    args: [...muxed, ...hlsVod('index.m3u8', 'seg%d.ts', '-hls_key_info_file', 'key-info.txt')],
  },
  'aes-sequence': {
    playlist: 'index.m3u8',
    // Encrypted here rather than by ffmpeg: given no IV, ffmpeg 4 uses each segment's media
    // sequence number and leaves the IV out of the playlist, but ffmpeg 5 encrypts every segment
    // with the first number and writes it into the playlist, which is not the case under test.
    files: { 'aes.key': HLS_KEY },
    args: [...muxed, ...hlsVod('index.m3u8', 'seg%d.ts', '-start_number', String(HLS_SEQUENCE_START))],
    encryptBySequence: 'aes.key',
  },
  fmp4: {
    playlist: 'index.m3u8',
    args: [...muxed, ...hlsVod('index.m3u8', 'seg%d.m4s', '-hls_segment_type', 'fmp4', '-hls_fmp4_init_filename', 'init.mp4')],
  },
  'single-file': { playlist: 'index.m3u8', args: [...muxed, ...hlsVod('index.m3u8', 'media.ts', '-hls_flags', 'single_file')] },
  master: {
    playlist: 'master.m3u8',
    dirs: HLS_VARIANTS.map(({ dir }) => dir),
    files: { 'master.m3u8': masterPlaylist },
    // One picture scaled to every size, so the variants show the same frames.
    args: [
      ...picture('1280x720'),
      ...tone(440),
      '-filter_complex',
      `[0:v]split=${HLS_VARIANTS.length}${HLS_VARIANTS.map(({ dir }) => `[${dir}in]`).join('')};${HLS_VARIANTS.map(({ dir, width, height }) => `[${dir}in]scale=${width}:${height}[${dir}]`).join(';')}`,
      ...HLS_VARIANTS.flatMap(({ dir, bandwidth }) => [
        '-map',
        `[${dir}]`,
        '-map',
        '1:a',
        ...h264,
        '-b:v',
        String(bandwidth - 100_000),
        ...aac,
        ...hlsVod(`${dir}/index.m3u8`, `${dir}/seg%d.ts`),
      ]),
    ],
  },
  'audio-rendition': {
    playlist: 'master.m3u8',
    dirs: ['video', 'audio-en', 'audio-de'],
    files: { 'master.m3u8': audioRenditionMaster },
    args: [
      ...picture('320x180'),
      ...tone(440),
      ...tone(660),
      '-map',
      '0:v',
      ...h264,
      ...hlsVod('video/index.m3u8', 'video/seg%d.ts'),
      '-map',
      '1:a',
      ...aac,
      ...hlsVod('audio-en/index.m3u8', 'audio-en/seg%d.ts'),
      '-map',
      '2:a',
      ...aac,
      ...hlsVod('audio-de/index.m3u8', 'audio-de/seg%d.ts'),
    ],
  },
} as const satisfies Record<string, HlsRecipe>;

export type HlsFixtureName = keyof typeof hlsRecipes;
