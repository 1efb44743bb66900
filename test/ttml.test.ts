import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stppDocuments } from '../src/sources/ttml/stpp.ts';
import { cuesToWebVtt, ttmlToCues } from '../src/sources/ttml/to-webvtt.ts';
import { runFfmpeg } from './support/ffmpeg.ts';
import { cue, ttml } from './support/ttml-documents.ts';

// TTML to WebVTT where ffmpeg or the network has its say: ffmpeg reads what is written, ffmpeg
// writes what is read, and no DTD is fetched. The rest, pure functions, are in test/unit/ttml.test.ts.

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-ttml-test-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('WebVTT out of cues', () => {
  it('when the WebVTT made from a TTML file is read by ffmpeg, then every cue comes out with its timing and text intact', async () => {
    const xml = ttml(
      '<p begin="00:00:01.000" end="00:00:02.500">Fish &amp; chips &lt;3 --&gt; <span>ok</span><br/>second line</p><p begin="3723.4s" end="3725s">late</p>',
    );
    const file = path.join(scratch, 'out.vtt');
    await writeFile(file, cuesToWebVtt(ttmlToCues(xml)));
    const read = (await runFfmpeg(['-f', 'webvtt', '-i', file, '-f', 'webvtt', '-'])).toString('utf8');
    // ffmpeg's WebVTT encoder writes the decoded text back as it is.
    expect(read).toBe('WEBVTT\n\n00:01.000 --> 00:02.500\nFish & chips <3 --> ok\nsecond line\n\n01:02:03.400 --> 01:02:05.000\nlate\n');
  });
});

describe('stpp segments', () => {
  it('when ffmpeg writes TTML into an MP4 stpp track, then the cues of its sample come out', async () => {
    // Debian's ffmpeg 5.1 has a TTML encoder, but its MP4 muxer refuses to fragment a TTML track
    // ("Fragmentation is not currently supported for TTML"): the file is a plain MP4, whose one
    // sample holds every cue. The fragmented segments above are built by hand.
    const vtt = path.join(scratch, 'in.vtt');
    await writeFile(vtt, 'WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nFish &amp; chips\n\n00:00:03.000 --> 00:00:04.000\nLine one\nLine two\n');
    const mp4 = path.join(scratch, 'stpp.mp4');
    await runFfmpeg(['-i', vtt, '-c:s', 'ttml', '-f', 'mp4', mp4]);
    const data = await readFile(mp4);
    expect(data.includes('stpp')).toBe(true);
    const documents = stppDocuments(data);
    expect(documents).toHaveLength(1);
    expect(documents.flatMap(ttmlToCues)).toEqual([cue(1, 2.5, 'Fish & chips'), cue(3, 4, 'Line one\nLine two')]);
  });
});

describe('hostile TTML', () => {
  it('when a document names an external DTD and entity, then nothing is fetched and the cues come out', async () => {
    let requests = 0;
    const server: Server = createServer((_request, response) => {
      requests++;
      response.end('<!ENTITY x "fetched">');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tt.dtd`;
      const xml = `<!DOCTYPE tt SYSTEM "${url}">${ttml('<p begin="1s" end="2s">a</p>')}`;
      expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'a')]);
      await sleep(200);
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
