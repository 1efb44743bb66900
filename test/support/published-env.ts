// Global setup runs in Jest's parent process; the test files run in worker processes that inherit
// its environment, so the environment is how the setup's results reach them.

export const ADMIN_DATABASE_URL_ENV = 'TEST_ADMIN_DATABASE_URL';
export const MEDIA_DIR_ENV = 'TEST_MEDIA_DIR';

export function publishedEnv(name: typeof ADMIN_DATABASE_URL_ENV | typeof MEDIA_DIR_ENV): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: test/support/global-setup.ts publishes it, so run the tests through jest (npm test).`);
  }
  return value;
}
