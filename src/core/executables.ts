import { accessSync, constants } from 'node:fs';
import path from 'node:path';

// Where a program is: the one lookup of executables on PATH, for ffmpeg in the service and for the
// tools the tests and the bench drive (nginx, chromium, curl, yt-dlp).

/** Whether `file` is there and may be executed. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first of `names` that is an executable file in a directory of PATH (then of `moreDirs`); null when none is. */
export function findExecutable(names: string[], moreDirs: string[] = []): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...moreDirs].filter(Boolean)) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return null;
}
