import { chromium, type Browser } from 'playwright-core';
import { findExecutable } from '../../src/core/executables.ts';

// Debian's chromium, driven by playwright-core: never a browser that playwright downloads.
// .ci/run installs the package when it is missing.

const CANDIDATES = ['chromium', 'chromium-browser'];

/** The chromium on PATH (CHROMIUM_PATH overrides), or an error that says how to get one. */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const found = findExecutable(CANDIDATES);
  if (found) return found;
  throw new Error("No chromium on PATH: install Debian's (apt-get install chromium) or set CHROMIUM_PATH.");
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
}
