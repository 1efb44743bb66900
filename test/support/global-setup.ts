import { tsImport } from 'tsx/esm/api';

// Jest loads this file outside its test runtime: transpiled, then handed to Node's own ESM loader,
// which cannot follow imports of other .ts files. tsx loads the real setup and everything it
// imports (including src/), so only this file has to live with that restriction.
export default async function globalSetup(): Promise<void> {
  const run = (await tsImport('./test-run.ts', import.meta.url)) as typeof import('./test-run.ts');
  await run.setUpTestRun();
}
