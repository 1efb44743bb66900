import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AddressPolicy } from '../src/net/address-policy.ts';
import { EntryList } from '../src/sources/listing/entries.ts';
import { listWithSite } from '../src/sources/listing/site.ts';
import { ExtractionProxy } from '../src/sources/site/proxy.ts';
import { extract } from '../src/sources/site/ytdlp.ts';
import { startedLater } from './support/harness.ts';
import { failure, processesWith, untilRunning, useYtDlpSite } from './support/ytdlp-site.ts';

// What yt-dlp is given to run with, seen by a stand-in program that records it: its environment,
// its directory, its memory limit, its arguments, a kill that takes its whole process group, and
// the service's own proxy credential, which dies with the run.

const { proxy, origin, dir, options, fakeYtDlp } = useYtDlpSite();
const confining = startedLater<ExtractionProxy>('the extraction proxy');

beforeAll(async () => confining.set(await ExtractionProxy.start(new AddressPolicy(true))));
afterAll(() => confining.get()?.close());

/** Whether a process with this pid exists (a zombie, exited but not yet reaped, still does). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The status the extraction proxy answers a plain GET of the origin's clip made with `proxyUrl`'s credential. */
async function throughProxy(proxyUrl: string): Promise<number | undefined> {
  const { username, password } = new URL(proxyUrl);
  const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const request = http.request({
    host: '127.0.0.1',
    port: confining.value.port,
    path: `${origin.url}/clip.mp4`,
    headers: { 'proxy-authorization': authorization },
    agent: false,
  });
  request.end();
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => request.once('response', resolve).once('error', reject));
  response.resume();
  return response.statusCode;
}

describe('how yt-dlp is run', () => {
  test('when yt-dlp runs, then it gets only PATH, HOME, LANG and the proxy for every scheme, a fresh HOME as its directory, removed afterwards, and the URL after --', async () => {
    const record = path.join(dir, 'run-record');
    const fake = await fakeYtDlp(
      [
        `tr '\\0' '\\n' < /proc/$$/environ | sort > '${record}.env'`,
        `pwd > '${record}.cwd'`,
        `grep 'Max address space' /proc/$$/limits > '${record}.limits'`,
        `for arg in "$@"; do echo "$arg"; done > '${record}.args'`,
        `printf '{"_type":"video","extractor_key":"Fake","title":"t","url":"http://127.0.0.1/c.mp4","protocol":"http"}'`,
      ].join('\n'),
    );
    process.env.VDS_LEAK_CHECK = 'must not reach yt-dlp';
    try {
      await extract(fake, options('http://127.0.0.1/page?a=1', { extractors: 'dedicated' }));
    } finally {
      delete process.env.VDS_LEAK_CHECK;
    }
    const env = (await readFile(`${record}.env`, 'utf8')).trim().split('\n');
    const home = (await readFile(`${record}.cwd`, 'utf8')).trim();
    const proxies = ['FTP_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'ftp_proxy', 'http_proxy', 'https_proxy'];
    expect(env.map((line) => line.split('=')[0])).toEqual([
      'FTP_PROXY',
      'HOME',
      'HTTPS_PROXY',
      'HTTP_PROXY',
      'LANG',
      'PATH',
      'ftp_proxy',
      'http_proxy',
      'https_proxy',
    ]);
    for (const name of proxies) expect(env).toContain(`${name}=${proxy.url}`);
    expect(env).toContain(`HOME=${home}`);
    expect(env).toContain('LANG=C.UTF-8');
    await expect(stat(home)).rejects.toThrow('ENOENT');
    // Held to 2 GiB of address space (util-linux's prlimit), so that a page cannot make it take the machine's memory.
    expect(await readFile(`${record}.limits`, 'utf8')).toMatch(/^Max address space\s+2147483648\s+2147483648\s+bytes/);
    const args = (await readFile(`${record}.args`, 'utf8')).trim().split('\n');
    expect(args).toEqual([
      '--dump-single-json',
      '--no-playlist',
      '--playlist-items',
      '1',
      '--ignore-config',
      '--no-cache-dir',
      '--no-download',
      '--ies',
      'default,-generic',
      '--',
      'http://127.0.0.1/page?a=1',
    ]);
  });

  test('when yt-dlp runs with every extractor, then no --ies is given', async () => {
    const record = path.join(dir, 'all-args');
    const fake = await fakeYtDlp(`echo "$@" > '${record}'; printf '{"url":"http://127.0.0.1/c.mp4","protocol":"http"}'`);
    await extract(fake, options('http://127.0.0.1/page', { extractors: 'all' }));
    expect(await readFile(record, 'utf8')).not.toContain('--ies');
  });

  test('when yt-dlp leaves a process of its own behind, then a kill takes that one too', async () => {
    const marker = `grandchild-${randomBytes(6).toString('hex')}`;
    // Its output elsewhere, so that nothing but the kill of the group ends it before the run is over.
    const fake = await fakeYtDlp(`sh -c 'sleep 60; echo ${marker}' >/dev/null 2>&1 </dev/null &\nexec sleep 30`);
    const extraction = failure(extract(fake, options('http://127.0.0.1/page', { timeoutMs: 1000 })));
    await untilRunning(marker);
    expect(await extraction).toMatchObject({ code: 'source_timeout' });
    expect(await processesWith(marker)).toEqual([]);
  });

  test('when yt-dlp exits while a process it left in a session of its own holds its output, then the run is over with what yt-dlp wrote, not when that process lets go', async () => {
    const marker = `holder-${randomBytes(6).toString('hex')}`;
    const ready = path.join(dir, `${marker}.ready`);
    // yt-dlp exits only once the holder is in its own session: before that, the kill of yt-dlp's
    // group at its exit would take the holder too (as it did on a loaded machine).
    const fake = await fakeYtDlp(`setsid sh -c 'touch ${ready}; sleep 60; echo ${marker}' &
while [ ! -e '${ready}' ]; do sleep 0.01; done
printf '{"_type":"video","extractor_key":"Fake","title":"held","url":"http://127.0.0.1/c.mp4","protocol":"http"}'`);
    try {
      const extraction = extract(fake, options('http://127.0.0.1/page', { timeoutMs: 60_000 }));
      await untilRunning(marker);
      expect(await extraction).toMatchObject({ title: 'held' });
      // Over while the holder still runs: the run did not wait for it.
      expect(await processesWith(marker)).not.toEqual([]);
    } finally {
      for (const pid of await processesWith(marker)) process.kill(pid, 'SIGKILL');
    }
  }, 20_000);
});

describe("the run's proxy credential", () => {
  // Each stand-in records its pid and its proxy, uses the proxy (so the credential is shown good
  // while it runs), and leaves a process in a session of its own that holds its output open: the
  // extraction then settles only seconds after yt-dlp itself is gone, and the credential must not
  // wait for it.
  test.each([
    ['completes', `printf '{"_type":"video","extractor_key":"Fake","title":"t","url":"http://127.0.0.1/c.mp4"}'; exit 0`, 'video'],
    ['fails', `echo 'ERROR: Unsupported URL: x' >&2; exit 1`, 'unsupported_source'],
    ['crashes', 'kill -SEGV $$', 'unsupported_source'],
    ['runs past its time limit', 'exec sleep 30', 'source_timeout'],
    ['is cancelled', 'exec sleep 30', 'cancelled'],
  ])(
    'when yt-dlp %s, then its credential is refused by the proxy from the moment the run is over',
    async (_ending, end, outcome) => {
      const record = path.join(dir, `credential-${randomBytes(4).toString('hex')}`);
      const fake = await fakeYtDlp(
        [
          `curl -sS -o /dev/null -w '%{http_code}' '${origin.url}/clip.mp4' > '${record}.during'`,
          `setsid sleep 20 & echo $! > '${record}.holder'`,
          `echo "$http_proxy" > '${record}.proxy'`,
          `echo $$ > '${record}.pid'`,
          end,
        ].join('\n'),
      );
      const cancel = new AbortController();
      const site = { ytdlp: fake, proxy: confining.value, timeoutMs: outcome === 'source_timeout' ? 1500 : 60_000 };
      const listing = listWithSite(site, `${origin.url}/page`, new EntryList(10), 10, cancel.signal).then(
        (found) => found.kind,
        (error: unknown) => (error === cancel.signal.reason ? 'cancelled' : (error as { code?: string }).code),
      );
      for (let waited = 0; !existsSync(`${record}.pid`); waited += 10) {
        if (waited > 10_000) throw new Error('the stand-in did not start');
        await sleep(10);
      }
      const proxyUrl = (await readFile(`${record}.proxy`, 'utf8')).trim();
      const pid = Number(await readFile(`${record}.pid`, 'utf8'));
      const holder = Number(await readFile(`${record}.holder`, 'utf8'));
      expect(await readFile(`${record}.during`, 'utf8')).toBe('200');
      if (outcome === 'cancelled') cancel.abort(new Error('cancelled by its owner'));
      else while (alive(pid)) await sleep(5);
      const asked = origin.requests.length;
      try {
        expect(await throughProxy(proxyUrl)).toBe(407);
        expect(origin.requests).toHaveLength(asked);
      } finally {
        process.kill(holder, 'SIGKILL');
      }
      expect(await listing).toBe(outcome);
      expect(await throughProxy(proxyUrl)).toBe(407);
    },
    30_000,
  );
});
