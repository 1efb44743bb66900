// The start scripts tune glibc's allocator for the service's own process (MALLOC_ARENA_MAX,
// MALLOC_TRIM_THRESHOLD_). Those settings suit a Node heap, not the programs the service runs:
// with a trim threshold of 128 KiB, ffmpeg gave its short-lived packet buffers back to the system
// and faulted them in again, which doubled a remux's time. A child
// gets the environment as it was before the start script's tuning.

const ALLOCATOR_TUNING = /^MALLOC_/;

/** `process.env` without the allocator settings meant for the service itself, plus `extra`. */
export function childEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!ALLOCATOR_TUNING.test(name)) env[name] = value;
  return { ...env, ...extra };
}
