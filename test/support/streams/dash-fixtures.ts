import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveFfmpeg, runFfmpeg } from '../ffmpeg.ts';
import type { FixtureServer } from '../fixture-server.ts';
import { fixtureRecipes, sourceRecipes, type Boxes, type DashFixtureName, type FixtureRecipe, type SourceName } from './dash-recipes.ts';

// Generated once and kept in the system temp dir under a key of the ffmpeg binary and the text of
// the recipe and generator modules, so any edit to either regenerates, and parallel test files
// (or later runs) reuse one copy. The whole tree is built aside and renamed into place, so a run
// killed half-way never leaves a partial tree to be reused.

export type { DashFixtureName } from './dash-recipes.ts';

export type DashFixture = {
  /** Serve this folder as it is: manifest.mpd and every file it names, at the relative paths it names them. */
  dir: string;
  manifest: string;
  /** Per video height, the MP4 whose video stream that Representation carries, frame for frame. */
  videoSources: Record<number, string>;
};

function boxesOf(file: string, bytes: Buffer): Boxes {
  const boxes: Boxes = {};
  for (let offset = 0; offset + 8 <= bytes.length;) {
    const size = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    if (size < 8) throw new Error(`${file}: box ${type} at ${offset} has size ${size}; only 32-bit sizes are expected here`);
    boxes[type] ??= { offset, size };
    offset += size;
  }
  return boxes;
}

async function buildFixture(root: string, name: DashFixtureName): Promise<void> {
  const recipe: FixtureRecipe = fixtureRecipes[name];
  const dir = path.join(root, name);
  for (const run of recipe.runs) {
    const output = path.join(dir, run.output);
    await mkdir(path.dirname(output), { recursive: true });
    const inputs = run.inputs.flatMap((source) => ['-i', path.join(root, 'sources', source)]);
    await runFfmpeg([...inputs, ...run.args, output]);
  }
  if (recipe.mpd) {
    const layouts = new Map(
      await Promise.all(recipe.runs.map(async (run) => [run.output, boxesOf(run.output, await readFile(path.join(dir, run.output)))] as const)),
    );
    await writeFile(
      path.join(dir, 'manifest.mpd'),
      recipe.mpd((file) => layouts.get(file) ?? {}),
    );
  }
}

async function build(target: string): Promise<void> {
  const partial = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.part`;
  try {
    await mkdir(path.join(partial, 'sources'), { recursive: true });
    await Promise.all(Object.entries(sourceRecipes).map(([name, args]) => runFfmpeg([...args, '-f', 'mp4', path.join(partial, 'sources', name)])));
    await Promise.all((Object.keys(fixtureRecipes) as DashFixtureName[]).map((name) => buildFixture(partial, name)));
    await rename(partial, target).catch((error: unknown) => {
      // Another test file finished the same tree first; theirs is as good as ours.
      if (!existsSync(target)) throw error;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}

async function generate(): Promise<Record<DashFixtureName, DashFixture>> {
  const key = createHash('sha256').update(await resolveFfmpeg());
  for (const module of ['./dash-recipes.ts', './dash-fixtures.ts']) key.update(await readFile(new URL(module, import.meta.url)));
  const root = path.join(os.tmpdir(), `vds-test-dash-${key.digest('hex').slice(0, 16)}`);
  if (!existsSync(root)) await build(root);

  const source = (name: SourceName) => path.join(root, 'sources', name);
  const entries = Object.entries(fixtureRecipes).map(([name, recipe]: [string, FixtureRecipe]) => {
    const dir = path.join(root, name);
    const videoSources = Object.fromEntries(Object.entries(recipe.videoSources).map(([height, name]) => [height, source(name)]));
    return [name, { dir, manifest: path.join(dir, 'manifest.mpd'), videoSources }];
  });
  return Object.fromEntries(entries) as Record<DashFixtureName, DashFixture>;
}

let fixtures: Promise<Record<DashFixtureName, DashFixture>> | undefined;

/** The DASH fixtures, generated on first use (once per machine, while the recipes stay the same). */
export function dashFixtures(): Promise<Record<DashFixtureName, DashFixture>> {
  fixtures ??= generate();
  return fixtures;
}

/** Serves every file of the fixture under `routePrefix` (e.g. "/number"); returns the manifest's URL. */
export function serveDashFixture(server: FixtureServer, fixture: DashFixture, routePrefix: string): string {
  server.directory(routePrefix, fixture.dir);
  return server.url(`${routePrefix}/manifest.mpd`);
}
