import { CreateRequestCheck, InvalidDownloadRequest, type CreateDownloadInput } from '../../src/downloads/create-rules.ts';

// The rules a request for a download must keep beyond the contract's schema, decided by the
// domain's create: the same for every caller of it, with no HTTP and no database in between.

const check =
  (input: CreateDownloadInput, rules = { allowPrivateAddresses: false, webhooks: true }) =>
  () =>
    new CreateRequestCheck(rules).check(input);

function refusal(run: () => void): { field: string; reason: string } | null {
  try {
    run();
    return null;
  } catch (error) {
    if (!(error instanceof InvalidDownloadRequest)) throw error;
    return { field: error.field, reason: error.reason };
  }
}

test('when the request keeps every rule, then nothing is refused', () => {
  expect(
    refusal(check({ url: 'https://example.com/a.mp4', mode: 'audio', audio_format: 'mp3', subtitles: ['en'], callback_url: 'https://example.com/hook' })),
  ).toBeNull();
});

test.each([
  ['a port over 65535', { url: 'http://example.com:70000/a.mp4' }, '/body/url', 'must be an http(s) URL with a host'],
  ['port 0', { url: 'http://example.com:0/a.mp4' }, '/body/url', 'must be an http(s) URL with a host'],
  ['a loopback URL', { url: 'http://127.0.0.1/a.mp4' }, '/body/url', 'must not point to a private or loopback address'],
  ['audio_format without mode audio', { url: 'https://example.com/a.mp4', audio_format: 'mp3' }, '/body/audio_format', 'needs mode "audio"'],
  [
    'subtitles "all" among languages',
    { url: 'https://example.com/a.mp4', subtitles: ['en', 'ALL'] },
    '/body/subtitles',
    'must be ["all"] alone, or language tags',
  ],
  [
    'a callback with credentials',
    { url: 'https://example.com/a.mp4', callback_url: 'https://user:pw@example.com/hook' },
    '/body/callback_url',
    'must not carry a user name or password',
  ],
  [
    'a private callback',
    { url: 'https://example.com/a.mp4', callback_url: 'http://10.0.0.1/hook' },
    '/body/callback_url',
    'must not point to a private or loopback address',
  ],
] as Array<[string, CreateDownloadInput, string, string]>)('when the request has %s, then it is refused naming the field', (_name, input, field, reason) => {
  expect(refusal(check(input))).toEqual({ field, reason });
});

test('when the server sends no webhooks, then a callback_url is refused, and private addresses pass where they are allowed', () => {
  const input = { url: 'http://127.0.0.1/a.mp4', callback_url: 'https://example.com/hook' };
  expect(refusal(check(input, { allowPrivateAddresses: true, webhooks: false }))).toEqual({
    field: '/body/callback_url',
    reason: 'needs the server setting WEBHOOK_SECRET',
  });
  expect(refusal(check({ url: input.url }, { allowPrivateAddresses: true, webhooks: false }))).toBeNull();
});
