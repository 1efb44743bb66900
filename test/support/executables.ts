import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The first of `names` that is an executable file in a directory of PATH (then of `moreDirs`); null when none is. */
export function findExecutable(names: string[], moreDirs: string[] = []): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...moreDirs].filter(Boolean)) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here.
      }
    }
  }
  return null;
}
