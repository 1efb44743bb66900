import { parseClip, parseTime } from '../../src/cli/clip.ts';

// What `vds get --clip` takes: start-end, each in seconds or as m:ss or h:mm:ss.

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
