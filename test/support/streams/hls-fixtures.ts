import { createCipheriv, createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveFfmpeg, runFfmpeg } from '../ffmpeg.ts';
import type { FixtureServer } from '../fixture-server.ts';
import { hlsRecipes, type HlsFixtureName, type HlsRecipe } from './hls-recipes.ts';

// HLS streams made by the real ffmpeg, kept in the system temp dir under a key of the binary and
// the recipes (like test/support/media-cache.ts), so that later runs and parallel Jest workers
// reuse them. Each fixture is built in a directory of its own and renamed into place whole.

export type { HlsFixtureName } from './hls-recipes.ts';

export type HlsFixture = {
  /** Every file of the stream: playlists, segments, keys. */
  dir: string;
  /** The playlist to start from, relative to `dir`. */
  playlist: string;
};

export type HlsFixtures = Record<HlsFixtureName, HlsFixture>;

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** AES-128 as an HLS playlist without an IV asks for it: each segment's IV is its media sequence number. */
async function encryptBySequence(dir: string, playlist: string, keyFile: string): Promise<void> {
  const key = await readFile(path.join(dir, keyFile));
  const lines = (await readFile(path.join(dir, playlist), 'utf8')).split('\n');
  let sequence = Number(/^#EXT-X-MEDIA-SEQUENCE:(\d+)$/m.exec(lines.join('\n'))?.[1] ?? 0);
  for (const segment of lines.filter((line) => line && !line.startsWith('#'))) {
    const iv = Buffer.alloc(16);
    iv.writeBigUInt64BE(BigInt(sequence++), 8);
    const cipher = createCipheriv('aes-128-cbc', key, iv);
    const clear = await readFile(path.join(dir, segment));
    await writeFile(path.join(dir, segment), Buffer.concat([cipher.update(clear), cipher.final()]));
  }
  const firstSegment = lines.findIndex((line) => line.startsWith('#EXTINF'));
  lines.splice(firstSegment, 0, `#EXT-X-KEY:METHOD=AES-128,URI="${keyFile}"`);
  await writeFile(path.join(dir, playlist), lines.join('\n'));
}

async function ensureFixture(cacheDir: string, name: HlsFixtureName): Promise<HlsFixture> {
  const recipe: HlsRecipe = hlsRecipes[name];
  const fixture = { dir: path.join(cacheDir, name), playlist: recipe.playlist };
  if (await exists(fixture.dir)) return fixture;
  const building = await mkdtemp(path.join(cacheDir, `.${name}-`));
  try {
    for (const dir of recipe.dirs ?? []) await mkdir(path.join(building, dir));
    for (const [file, content] of Object.entries(recipe.files ?? {})) await writeFile(path.join(building, file), content);
    await runFfmpeg(recipe.args, { cwd: building });
    if (recipe.encryptBySequence) await encryptBySequence(building, recipe.playlist, recipe.encryptBySequence);
    if (!(await exists(path.join(building, recipe.playlist)))) throw new Error(`ffmpeg made no ${recipe.playlist} for the HLS fixture ${name}`);
    await chmod(building, 0o755);
    await rename(building, fixture.dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another worker finished the same fixture first; its copy is as good as this one.
      if (!(await exists(fixture.dir))) throw error;
    });
    return fixture;
  } finally {
    await rm(building, { recursive: true, force: true });
  }
}

async function generate(): Promise<HlsFixtures> {
  const ffmpeg = await resolveFfmpeg();
  const key = createHash('sha256').update(JSON.stringify({ ffmpeg, hlsRecipes })).digest('hex').slice(0, 16);
  const cacheDir = path.join(os.tmpdir(), `vds-test-hls-${key}`);
  await mkdir(cacheDir, { recursive: true, mode: 0o755 });
  const names = Object.keys(hlsRecipes) as HlsFixtureName[];
  const fixtures = await Promise.all(names.map((name) => ensureFixture(cacheDir, name)));
  return Object.fromEntries(names.map((name, index) => [name, fixtures[index]])) as HlsFixtures;
}

let prepared: Promise<HlsFixtures> | undefined;

/** Every HLS fixture, generated on first use (once per process, and cached on disk across runs). */
export function prepareHlsFixtures(): Promise<HlsFixtures> {
  prepared ??= generate();
  return prepared;
}

/** Serves every file of `fixture` under `routePrefix` (e.g. "/hls/ts"); returns its playlist's URL. */
export function serveHlsFixture(server: FixtureServer, fixture: HlsFixture, routePrefix: string): string {
  server.directory(routePrefix, fixture.dir);
  return server.url(`${routePrefix}/${fixture.playlist}`);
}
