// The DASH test streams, as ffmpeg runs over a few small sources. ffmpeg's dash muxer writes the
// SegmentTemplate and SegmentList manifests itself; SegmentBase and a bare BaseURL it cannot
// write, so those MPDs are written here around files ffmpeg made.

// One-second GOPs, so one-second segments cut at every keyframe.
const h264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-keyint_min', '25', '-sc_threshold', '0'];
const testVideo = (pattern: string, size: string) => ['-f', 'lavfi', '-i', `${pattern}=size=${size}:rate=25:duration=4`];

export const sourceRecipes = {
  'clip.mp4': [
    ...testVideo('testsrc', '320x240'),
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=4'],
    ...h264,
    '-c:a',
    'aac',
    '-b:a',
    '64k',
  ],
  'low.mp4': [...testVideo('testsrc2', '160x120'), ...h264],
  'high.mp4': [...testVideo('testsrc2', '480x360'), ...h264],
} as const satisfies Record<string, readonly string[]>;

export type SourceName = keyof typeof sourceRecipes;

// Streams are copied, never re-encoded, so each Representation decodes to its source's exact
// frames. make_non_negative: left alone, the 2018 muxer names the first audio segment after its
// negative AAC priming time while its SegmentTimeline says 0.
const dash = ['-c', 'copy', '-avoid_negative_ts', 'make_non_negative', '-f', 'dash', '-seg_duration', '1'];
const fragmented = ['-c', 'copy', '-f', 'mp4', '-movflags'];

/** Where each top-level MP4 box of a file starts and how long it is (first of each type). */
export type Boxes = Record<string, { offset: number; size: number } | undefined>;

export type FixtureRecipe = {
  /** ffmpeg runs in order: the sources they read, their output options, and the output path in the fixture folder. */
  runs: Array<{ inputs: SourceName[]; args: string[]; output: string }>;
  /** Writes manifest.mpd when ffmpeg does not, from the box layout of the files it made. */
  mpd?: (boxesOf: (file: string) => Boxes) => string;
  /** The source whose video each video Representation carries, by height. */
  videoSources: Record<number, SourceName>;
};

const dashRun = (inputs: SourceName[], ...args: string[]) => ({ inputs, args: [...args, ...dash], output: 'manifest.mpd' });

function inclusive(box: { offset: number; size: number } | undefined, from = box?.offset ?? 0): string {
  if (!box) throw new Error('the file lacks a box the MPD needs');
  return `${from}-${box.offset + box.size - 1}`;
}

function mpd(body: string): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" type="static" mediaPresentationDuration="PT4S" minBufferTime="PT2S">
${body}
</MPD>
`;
}

export const fixtureRecipes = {
  // SegmentTemplate with $Number$ and @duration.
  number: { runs: [dashRun(['clip.mp4'], '-use_template', '1', '-use_timeline', '0')], videoSources: { 240: 'clip.mp4' } },
  // SegmentTemplate with $Time$ and a SegmentTimeline (a non-zero first @t, @r repeats).
  time: {
    runs: [dashRun(['clip.mp4'], '-use_template', '1', '-use_timeline', '1', '-media_seg_name', 'chunk-$RepresentationID$-$Time$.$ext$')],
    videoSources: { 240: 'clip.mp4' },
  },
  // SegmentList of separate files, with an Initialization sourceURL.
  list: { runs: [dashRun(['clip.mp4'], '-use_template', '0')], videoSources: { 240: 'clip.mp4' } },
  // SegmentList of mediaRanges in one file per Representation, with an Initialization range.
  'list-ranges': { runs: [dashRun(['clip.mp4'], '-use_template', '0', '-single_file', '1')], videoSources: { 240: 'clip.mp4' } },
  // Three video heights, listed neither ascending nor descending, and one audio.
  multi: {
    runs: [
      dashRun(
        ['clip.mp4', 'high.mp4', 'low.mp4'],
        '-map',
        '0:v',
        '-map',
        '1:v',
        '-map',
        '2:v',
        '-map',
        '0:a',
        '-adaptation_sets',
        'id=0,streams=v id=1,streams=a',
      ),
    ],
    videoSources: { 240: 'clip.mp4', 360: 'high.mp4', 120: 'low.mp4' },
  },
  // SegmentBase with an indexRange (a sidx) and an Initialization range: the on-demand profile.
  base: {
    runs: [
      { inputs: ['clip.mp4'], args: ['-map', '0:v', ...fragmented, 'dash+global_sidx'], output: 'media/video.mp4' },
      { inputs: ['clip.mp4'], args: ['-map', '0:a', ...fragmented, 'dash+global_sidx'], output: 'media/audio.mp4' },
    ],
    mpd: (boxesOf) => {
      const video = boxesOf('media/video.mp4');
      const audio = boxesOf('media/audio.mp4');
      return mpd(`  <Period>
    <AdaptationSet contentType="video" mimeType="video/mp4">
      <Representation id="video" codecs="avc1.42c00d" bandwidth="170000" width="320" height="240">
        <BaseURL>media/video.mp4</BaseURL>
        <SegmentBase indexRange="${inclusive(video.sidx)}"><Initialization range="${inclusive(video.moov, 0)}"/></SegmentBase>
      </Representation>
    </AdaptationSet>
    <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
      <Representation id="audio" codecs="mp4a.40.2" bandwidth="64000">
        <BaseURL>media/audio.mp4</BaseURL>
        <SegmentBase indexRange="${inclusive(audio.sidx)}"><Initialization range="${inclusive(audio.moov, 0)}"/></SegmentBase>
      </Representation>
    </AdaptationSet>
  </Period>`);
    },
    videoSources: { 240: 'clip.mp4' },
  },
  // One Representation holding video and audio, named only by BaseURLs at two levels.
  muxed: {
    runs: [{ inputs: ['clip.mp4'], args: [...fragmented, 'frag_keyframe+empty_moov+default_base_moof'], output: 'files/muxed.mp4' }],
    mpd: () =>
      mpd(`  <BaseURL>files/</BaseURL>
  <Period>
    <AdaptationSet mimeType="video/mp4">
      <Representation id="muxed" codecs="avc1.42c00d,mp4a.40.2" bandwidth="240000" width="320" height="240">
        <BaseURL>muxed.mp4</BaseURL>
      </Representation>
    </AdaptationSet>
  </Period>`),
    videoSources: { 240: 'clip.mp4' },
  },
} satisfies Record<string, FixtureRecipe>;

export type DashFixtureName = keyof typeof fixtureRecipes;
