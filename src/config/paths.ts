import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's root, where openapi.yaml, prisma/ and dist/ are, wherever the process was started
 * and whether it runs from src/ (tsx) or from dist/src/ (compiled): the nearest folder up that
 * holds openapi.yaml.
 */
export const projectRoot = (() => {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'openapi.yaml'))) return dir;
    if (dir === path.dirname(dir)) throw new Error('openapi.yaml not found above the service code: the project is incomplete.');
  }
})();
