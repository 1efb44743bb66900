import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { extract } from '../src/sources/site/ytdlp.ts';
import { failure, processesWith, untilRunning, useYtDlpSite } from './support/ytdlp-site.ts';

// What yt-dlp is given to run with, seen by a stand-in program that records it: its environment,
// its directory, its memory limit, its arguments, and a kill that takes its whole process group.

const { proxy, dir, options, fakeYtDlp } = useYtDlpSite();

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
});
