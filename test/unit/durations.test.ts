import { subscriptionRows } from '../../src/cli/subscriptions.ts';
import { formatInterval, formatRelative, parseDuration, type Subscription } from '../../src/client/index.ts';

// How a person writes the interval of a subscription (vds subscribe --every, the page's form),
// and how the clients show intervals and check times back.

test.each([
  ['90s', 90],
  ['15m', 900],
  ['1h', 3_600],
  ['1d', 86_400],
  ['1h30m', 5_400],
  ['1d12h', 129_600],
  ['2h0m5s', 7_205],
  ['3600', 3_600],
  ['  1H ', 3_600],
  ['30d', 2_592_000],
])('when the interval is written %j, then it is %i seconds', (text, seconds) => {
  expect(parseDuration(text)).toBe(seconds);
});

test.each([[''], ['0'], ['0m'], ['h'], ['1x'], ['1.5h'], ['-1h'], ['1m1h'], ['1 h'], ['1h 30m'], ['one hour'], ['1e3'], ['99999999999']])(
  'when the interval is written %j, then it is not a duration',
  (text) => {
    expect(parseDuration(text)).toBeUndefined();
  },
);

test.each([
  [90, '1m30s'],
  [900, '15m'],
  [3_600, '1h'],
  [5_400, '1h30m'],
  [86_400, '1d'],
  [2_592_000, '30d'],
  [45, '45s'],
])('when an interval of %i seconds is shown, then it reads %j, which reads back as the same seconds', (seconds, text) => {
  expect(formatInterval(seconds)).toBe(text);
  expect(parseDuration(text)).toBe(seconds);
});

const NOW = Date.parse('2026-11-29T12:00:00Z');

test.each([
  ['2026-11-29T12:00:02Z', 'just now'],
  ['2026-11-29T12:00:30Z', 'in 30s'],
  ['2026-11-29T11:55:00Z', '5m ago'],
  ['2026-11-29T12:59:59Z', 'in 59m'],
  ['2026-11-29T09:00:00Z', '3h ago'],
  ['2026-11-27T12:00:00Z', '2d ago'],
])('when a check is at %s, then at noon it reads %j', (at, text) => {
  expect(formatRelative(at, NOW)).toBe(text);
});

const subscription = (over: Partial<Subscription>): Subscription => ({
  id: '5d0c2b1e-7a4f-4c3e-9b1d-8e2f6a7c9d10',
  name: null,
  url: 'https://media.example.com/podcast.xml',
  extractor: 'feed',
  enabled: true,
  status: 'active',
  interval_seconds: 3_600,
  title_contains: null,
  options: { quality: 'best', mode: 'video', audio_format: null, subtitles: [], clip: null, callback_url: null },
  last_checked_at: null,
  next_check_at: null,
  last_error: null,
  seen_count: 0,
  last_collection_id: null,
  created_at: '2026-11-29T11:00:00Z',
  updated_at: '2026-11-29T11:00:00Z',
  ...over,
});

test('when subscriptions are listed, then each is one row under a header, in aligned columns, and a failing one has its error under it', () => {
  const rows = subscriptionRows(
    [
      subscription({ name: 'Podcast', last_checked_at: '2026-11-29T11:50:00Z', next_check_at: '2026-11-29T12:50:00Z', seen_count: 12 }),
      subscription({
        id: '0b8e4d0a-3f4c-4f8e-8c59-6c1d2a9f7e21',
        url: 'https://media.example.com/channel/7',
        status: 'failing',
        interval_seconds: 900,
        next_check_at: '2026-11-29T12:30:00Z',
        last_error: { code: 'source_http_error', message: 'The source answered 500.', retryable: true },
      }),
      subscription({ id: '6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11', name: 'Paused one', status: 'paused', enabled: false }),
    ],
    NOW,
  );
  expect(rows).toEqual([
    'ID                                    STATUS   EVERY  LAST CHECK  NEXT CHECK  SEEN  NAME OR URL',
    '5d0c2b1e-7a4f-4c3e-9b1d-8e2f6a7c9d10  active   1h     10m ago     in 50m      12    Podcast',
    '0b8e4d0a-3f4c-4f8e-8c59-6c1d2a9f7e21  failing  15m    never       in 30m      0     https://media.example.com/channel/7',
    '  last error (source_http_error): The source answered 500.',
    '6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11  paused   1h     never       -           0     Paused one',
  ]);
});
