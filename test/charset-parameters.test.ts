import { useService } from './support/harness.ts';

// A Content-Type whose charset is ambiguous: RFC 6838 (4.3) makes a parameter given twice an error,
// and an empty charset names none. Either is refused, as any charset but UTF-8 is, and creates
// nothing: body-parser would take the first of two (so `utf-8; charset=latin1` would create a
// download that a proxy reading the last one took for Latin-1), and an empty one as UTF-8.

const { app } = useService({ role: 'api' });
const BODY = Buffer.from(JSON.stringify({ url: 'http://127.0.0.1:9/clip.mp4' }), 'utf8');

async function listed(): Promise<number> {
  const res = await app.http.request('GET', '/downloads', '/downloads');
  return (res.body as { items: unknown[] }).items.length;
}

test.each([
  ['a charset given twice, UTF-8 first', 'application/json; charset=utf-8; charset=latin1'],
  ['an empty charset', 'application/json; charset='],
])('when a body comes with %s, then it is a 415 problem+json and nothing is created', async (_name, contentType) => {
  const before = await listed();
  const res = await fetch(`${app.service.url}/downloads`, { method: 'POST', headers: { 'Content-Type': contentType }, body: BODY });
  expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
    status: 415,
    type: expect.stringMatching(/^application\/problem\+json/) as unknown,
  });
  expect(((await res.json()) as { detail: string }).detail).toMatch(/charset/);
  expect(await listed()).toBe(before);
});
