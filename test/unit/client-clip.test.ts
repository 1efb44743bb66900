import { clipOfFields, describeClip, parseClip, parseTime } from '../../src/client/clip.ts';

// What `vds get --clip` takes (start-end, each in seconds or as m:ss or h:mm:ss), what the page's
// two fields take, and how a card shows a clip.

test.each([
  ['1:30-2:00', { start_seconds: 90, end_seconds: 120 }],
  ['90-120', { start_seconds: 90, end_seconds: 120 }],
  ['0-0.5', { start_seconds: 0, end_seconds: 0.5 }],
  ['1:02:03.5-1:02:10', { start_seconds: 3723.5, end_seconds: 3730 }],
  ['1:30-', { start_seconds: 90, end_seconds: null }],
  [' 5 - 7 ', { start_seconds: 5, end_seconds: 7 }],
])('when --clip is %j, then the clip is %j', (text, clip) => {
  expect(parseClip(text)).toEqual(clip);
});

test.each([['1:30'], ['2:00-1:30'], ['5-5'], ['-5'], ['a-b'], ['1:60-2:00'], ['1:-2'], ['1e2-200'], ['']])('when --clip is %j, then it is refused', (text) => {
  expect(parseClip(text)).toBeUndefined();
});

test('when a time has seconds past 59 after a colon, then it is no time; alone, any number of seconds is', () => {
  expect(parseTime('0:75')).toBeUndefined();
  expect(parseTime('75')).toBe(75);
});

test.each([
  ['', '', { clip: null }],
  ['1:30', '2:00', { clip: { start_seconds: 90, end_seconds: 120 } }],
  ['1:30', '', { clip: { start_seconds: 90, end_seconds: null } }],
  ['', '45', { clip: { start_seconds: 0, end_seconds: 45 } }],
  ['1:75', '', { problem: expect.stringContaining('"1:75" is not a time') }],
  ['', 'soon', { problem: expect.stringContaining('"soon" is not a time') }],
  ['2:00', '1:30', { problem: 'The clip must start before it ends.' }],
])('when the page has a clip from %j to %j, then it is %j', (start, end, outcome) => {
  expect(clipOfFields(start, end)).toEqual(outcome);
});

test('when a clip is shown, then its times are m:ss or h:mm:ss with their fraction, and a null end is the end', () => {
  expect(describeClip({ start_seconds: 90, end_seconds: 120 })).toBe('from 1:30 to 2:00');
  expect(describeClip({ start_seconds: 3723.5, end_seconds: null })).toBe('from 1:02:03.5 to the end');
});
