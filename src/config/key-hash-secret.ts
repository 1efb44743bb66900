import { randomBytes } from 'node:crypto';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, KEY_HASH_SECRET_RULE, type Config } from './index.ts';

// Owners are stored as HMACs of API keys under this secret. Unset, it is made once and kept in
// DATA_DIR; API processes on several machines must share it (KEY_HASH_SECRET), or each would
// record the same key as a different owner.

export const KEY_HASH_SECRET_FILE = 'key-hash-secret';

/** The secret as configured or kept; undefined when no API key is configured, since then nothing is hashed. */
export async function keyHashSecret(config: Config): Promise<Buffer | undefined> {
  if (config.apiKeys.length === 0 && config.adminApiKeys.length === 0) return undefined;
  if (config.keyHashSecret) return Buffer.from(config.keyHashSecret, 'utf8');
  const file = path.join(config.dataDir, KEY_HASH_SECRET_FILE);
  const kept = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const secret = (kept ?? (await makeSecret(file))).trim();
  // A file cut short or emptied by hand would make every owner a hash under a guessable key.
  if (secret.length < 32) {
    throw new ConfigError(`${file} (the kept KEY_HASH_SECRET) ${KEY_HASH_SECRET_RULE}; remove it to have a new one made, or set KEY_HASH_SECRET.`);
  }
  return Buffer.from(secret, 'utf8');
}

/**
 * Writes a new secret beside its place and links it there, which fails when another process
 * starting on the same DATA_DIR got there first: then its secret, complete, is the one read.
 */
async function makeSecret(file: string): Promise<string> {
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  try {
    await link(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(draft);
  }
  return readFile(file, 'utf8');
}
