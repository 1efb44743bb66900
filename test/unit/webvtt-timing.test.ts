import { shiftWebVtt } from '../../src/media/webvtt-timing.ts';

// A side-loaded WebVTT file moved to follow a clip: the cues move, what is not a cue stays.

test('when cues are moved by where the clip starts, then each moves back, one across the start starts at 0, and those outside are left out', () => {
  const vtt = [
    'WEBVTT - the source',
    'NOTE kept as it was',
    'early\n00:00:01.000 --> 00:00:02.000\nbefore',
    '00:00:09.500 --> 00:00:10.500 line:10%\nacross',
    'id-2\n00:00:12.250 --> 00:00:13.000 align:start\n<b>inside</b>\nsecond line',
    '01:00:00.000 --> 01:00:01.000\nlong after',
  ].join('\n\n');
  expect(shiftWebVtt(`${vtt}\n`, 10, 30)).toBe(
    [
      'WEBVTT - the source',
      'NOTE kept as it was',
      '00:00:00.000 --> 00:00:00.500 line:10%\nacross',
      'id-2\n00:00:02.250 --> 00:00:03.000 align:start\n<b>inside</b>\nsecond line',
    ].join('\n\n') + '\n',
  );
});

test('when the kept part has no known end, then no cue is left out for starting late; CRLF lines are read as lines', () => {
  const vtt = 'WEBVTT\r\n\r\n00:00:05.000 --> 00:00:06.000\r\nlate\r\n\r\n59:00.000 --> 59:01.000\r\nshort form\r\n';
  expect(shiftWebVtt(vtt, 2.5, null)).toBe('WEBVTT\n\n00:00:02.500 --> 00:00:03.500\nlate\n\n00:58:57.500 --> 00:58:58.500\nshort form\n');
});

test('when the kept part starts before 0 (a first packet decoded early), then the cues move forward by as much', () => {
  expect(shiftWebVtt('WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nfirst\n', -0.08, 5)).toBe('WEBVTT\n\n00:00:00.080 --> 00:00:01.080\nfirst\n');
});
