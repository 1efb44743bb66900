import type { Config } from '../../src/config/index.ts';
import { startTestService, type TestService } from './api.ts';
import { startFixtureServer, type FixtureServer } from './fixture-server.ts';

// The set-up most test files share: a service on its own database and data dir, and a fixture
// server for it to download from, both started before the file's tests and stopped after them.

/**
 * A stand-in for what a beforeAll hook starts, usable as the thing itself once the hook has run:
 * test bodies keep writing `app.http` or `source.file(...)` at module level.
 */
export function startedLater<T extends object>(name: string): { value: T; set(started: T): void; get(): T | undefined } {
  let current: T | undefined;
  const started = (): T => {
    if (!current) throw new Error(`${name} is used before the beforeAll that starts it has run`);
    return current;
  };
  const value = new Proxy({} as T, {
    get(_, property) {
      const target = started();
      const member: unknown = Reflect.get(target, property, target);
      return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(target) : member;
    },
    has: (_, property) => Reflect.has(started(), property),
  });
  return { value, set: (next) => (current = next), get: () => current };
}

export type UseServiceOptions = {
  /** What must end before the service stops: processes or clients of its database, a second service on it. */
  beforeStop?: () => Promise<unknown>;
};

/**
 * Registers beforeAll and afterAll hooks (in the describe block it is called in) that start a test
 * service with `overrides` beside a fixture server, and stop both. Hooks declared after this call
 * run after these: a file's own beforeAll can use both, its own afterAll runs once both stopped.
 * Overrides that depend on what an earlier beforeAll started (an S3 server) are given as a function.
 */
export function useService(
  overrides: Partial<Config> | (() => Partial<Config>) = {},
  options: UseServiceOptions = {},
): { app: TestService; source: FixtureServer } {
  const app = startedLater<TestService>('the test service');
  const source = startedLater<FixtureServer>('the fixture server');
  beforeAll(async () => {
    const [service, server] = await Promise.allSettled([startTestService(typeof overrides === 'function' ? overrides() : overrides), startFixtureServer()]);
    if (service.status === 'fulfilled') app.set(service.value);
    if (server.status === 'fulfilled') source.set(server.value);
    for (const result of [service, server]) if (result.status === 'rejected') throw result.reason;
  });
  afterAll(async () => {
    await options.beforeStop?.();
    await source.get()?.close();
    await app.get()?.stop();
  });
  return { app: app.value, source: source.value };
}
