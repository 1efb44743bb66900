import { tsImport } from 'tsx/esm/api';

// Loaded like global-setup.ts, for the same reason.
export default async function globalTeardown(): Promise<void> {
  const run = (await tsImport('./test-run.ts', import.meta.url)) as typeof import('./test-run.ts');
  await run.tearDownTestRun();
}
