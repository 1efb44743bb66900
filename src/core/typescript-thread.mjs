// Starts a thread from its TypeScript source, as the tests run the service (core/threads.ts): a
// thread does not inherit the loader of the thread that started it.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
