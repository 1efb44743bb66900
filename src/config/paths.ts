import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root, where openapi.yaml and prisma/ are, wherever the process was started. */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
