// Starts the document reader's thread from its TypeScript source, as `npm start` and the tests run
// the service: a thread does not inherit the loader of the thread that started it.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
