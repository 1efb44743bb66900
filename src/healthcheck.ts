import { loadConfig } from './config/index.ts';

// The container image's health check (Containerfile): /readyz on the address and port the service
// listens on, under BASE_PATH. Exits 0 when it answers 200, else 1.

const ASK_MS = 4000;

const { host, port, basePath } = loadConfig();
// A wildcard address is reached on the loopback address of its family.
const target = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
const url = `http://${target.includes(':') ? `[${target}]` : target}:${port}${basePath}/readyz`;
const answer = await fetch(url, { signal: AbortSignal.timeout(ASK_MS) }).catch(() => undefined);
process.exit(answer?.ok ? 0 : 1);
