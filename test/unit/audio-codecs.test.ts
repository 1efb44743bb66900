import path from 'node:path';
import { AUDIO_CODEC_FAMILIES } from '../../src/sources/audio-codecs.ts';
import { planDash } from '../../src/sources/dash/index.ts';
import { readHlsPlaylist } from '../../src/sources/hls/read-playlist.ts';

// HLS and DASH read the same codec strings, so each audio codec family must mean audio to both:
// once one of them learned a family the other did not, and a stream's kind depended on its format.

const maxSegments = 1000;

/** The variant `worst` picks from an audio-only variant with these codecs, listed first, and a 320x180 one. */
function hlsWorstVariant(codecs: string): string {
  const master = [
    '#EXTM3U',
    `#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="${codecs}"`,
    'audio.m3u8',
    '#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180',
    'video.m3u8',
    '',
  ].join('\n');
  const reading = readHlsPlaylist({ text: master, url: 'http://127.0.0.1:9/master.m3u8', quality: 'worst', mode: 'video', expect: 'any', maxSegments });
  if (reading.type !== 'master') throw new Error('the master playlist was read as a media playlist');
  return path.basename(reading.variantUrl ?? '');
}

/** The kinds of the tracks planned for a DASH video Representation with these codecs and no separate audio. */
function dashSoleTrackKind(codecs: string): string {
  const text =
    '<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"><Period>' +
    `<AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="v" bandwidth="100000" height="240" codecs="${codecs}"><BaseURL>v.mp4</BaseURL></Representation></AdaptationSet>` +
    '</Period></MPD>';
  return planDash({ url: 'http://127.0.0.1:9/manifest.mpd', text, quality: 'best', maxSegments })
    .tracks.map((track) => track.kind)
    .join();
}

describe('audio codec families', () => {
  test.each(AUDIO_CODEC_FAMILIES.flatMap((family) => [family, `${family.toUpperCase()}.40.2`]))(
    'when a stream names the audio codec %s, then HLS passes its variant over as audio-only and DASH plans its lone video as muxed',
    (codec) => {
      expect(hlsWorstVariant(codec)).toBe('video.m3u8');
      expect(dashSoleTrackKind(`avc1.42c00d,${codec}`)).toBe('muxed');
    },
  );

  test.each(['avc1.42c00d', 'hvc1.1.6.L93.B0', 'vp09.00.10.08', 'mp4v.20.9'])(
    'when a stream names only the codec %s, which is not audio, then HLS keeps its variant and DASH plans a video track',
    (codec) => {
      expect(hlsWorstVariant(codec)).toBe('audio.m3u8');
      expect(dashSoleTrackKind(codec)).toBe('video');
    },
  );
});
