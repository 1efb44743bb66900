// pg-boss 12 and the generated Prisma client are ES modules, so Jest runs in its ESM mode
// (`npm test` sets --experimental-vm-modules) and ts-jest emits ESM.
//
// Two tiers, both run by `npm test`: `unit` (test/unit) holds tests of pure functions, which need
// no database, no media and no build, and run in seconds; `full` holds the rest, which start real
// servers and need what its global setup prepares. Jest runs a project's global setup only when
// one of its tests is run, so `npx jest test/unit` costs none of it.
const project = (displayName, testMatch) => ({
  displayName,
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  testMatch,
});

export default {
  projects: [
    project('unit', ['<rootDir>/test/unit/**/*.test.ts']),
    {
      ...project('full', ['<rootDir>/test/*.test.ts']),
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
  testTimeout: 60_000,
  // Each test file leaves some of its heap behind in the process that ran it (ESM modules under
  // vm are not collected with their context); over the whole suite that grew a heap whose major
  // collections stalled the service under test for most of a second. A worker whose heap passes
  // this after a file is replaced by a fresh one.
  workerIdleMemoryLimit: '400MB',
};
