import { existsSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

// Debian's chromium, driven by playwright-core: never a browser that playwright downloads.
// .ci/run installs the package when it is missing.

const CANDIDATES = ['chromium', 'chromium-browser'];

/** The chromium on PATH (CHROMIUM_PATH overrides), or an error that says how to get one. */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const name of CANDIDATES) if (existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  throw new Error("No chromium on PATH: install Debian's (apt-get install chromium) or set CHROMIUM_PATH.");
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
}
