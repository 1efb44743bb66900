import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveFfmpeg, runFfmpeg } from './ffmpeg.ts';
import { mediaRecipes, type MediaName } from './media-recipes.ts';

// Generated once and kept in the system temp dir under a key of the binary and the recipes, so
// later runs (and parallel runs) reuse the files instead of paying for ffmpeg every time.

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch {
    return undefined;
  }
}

async function ensureMedia(dir: string, name: MediaName): Promise<void> {
  const target = path.join(dir, name);
  const recipe = mediaRecipes[name];
  if ((await sizeOf(target)) !== undefined) return;
  // Written aside and renamed, so a run killed mid-way never leaves a truncated file to be reused.
  const partial = path.join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.part`);
  try {
    await runFfmpeg([...recipe.args, '-f', 'mp4', partial]);
    const size = (await sizeOf(partial)) ?? 0;
    if (size < recipe.minBytes) throw new Error(`${name} came out at ${size} bytes, expected at least ${recipe.minBytes}`);
    await chmod(partial, 0o644);
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
}

export async function prepareMediaCache(): Promise<string> {
  const ffmpeg = await resolveFfmpeg();
  const key = createHash('sha256').update(JSON.stringify({ ffmpeg, mediaRecipes })).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), `vds-test-media-${key}`);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await Promise.all((Object.keys(mediaRecipes) as MediaName[]).map((name) => ensureMedia(dir, name)));
  return dir;
}
