import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

// Same order as the service: an explicit FFMPEG_PATH wins, then a system ffmpeg (newer than the
// bundled one when installed), then the static binary shipped in @ffmpeg-installer/ffmpeg.

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function resolveFfmpeg(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const explicit = env.FFMPEG_PATH;
  if (explicit) {
    // A wrong explicit setting must fail loudly rather than silently test another binary.
    if (!(await isExecutable(explicit))) throw new Error(`FFMPEG_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, 'ffmpeg');
    if (await isExecutable(candidate)) return candidate;
  }
  const installer = await import('@ffmpeg-installer/ffmpeg');
  const bundled = installer.default.path;
  if (!(await isExecutable(bundled))) {
    throw new Error(`no ffmpeg found: FFMPEG_PATH is unset, none is on PATH, and ${bundled} is not executable`);
  }
  return bundled;
}
