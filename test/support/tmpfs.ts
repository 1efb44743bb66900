// Mounting a tmpfs (to fill a disk) needs root, as CI and the development machines have. Decided
// before collection: elsewhere the test counts as skipped and says why; as root a failed mount fails it.
const root = process.getuid?.() === 0;
const WHY = ' [skipped: mounting a tmpfs needs root]';

/** `test`, or for anyone but root a skipped test whose name says why. */
export function testOnTmpfs(name: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (root) test(name, fn, timeout);
  else test.skip(name + WHY, fn, timeout);
}

/** `describe`, or for anyone but root a skipped block whose name says why. */
export function describeOnTmpfs(name: string, fn: () => void): void {
  if (root) describe(name, fn);
  else describe.skip(name + WHY, fn);
}
