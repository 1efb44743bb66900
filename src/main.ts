import { explainStartFailure } from './config/explain.ts';
import { ConfigError, loadConfig } from './config/index.ts';
import { embeddedPostgresInstalled } from './db/embedded.ts';
import { startService, type Service } from './service.ts';

// `npm start`: the API and a worker in one process (ROLE=api or ROLE=worker runs one of them).

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}

// Listened for from the first moment: a signal that arrived while the service was starting would
// otherwise end the process on the spot, leaving the embedded PostgreSQL it had started behind.
// SIGHUP is a closed terminal or SSH session.
let service: Service | undefined;
let stopSignal: NodeJS.Signals | undefined;
let stopping = false;
function shutDown(signal: NodeJS.Signals): void {
  stopSignal ??= signal;
  if (!service || stopping) return;
  stopping = true;
  const running = service;
  running.log.info(`${stopSignal}: shutting down`);
  running.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      running.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    },
  );
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => shutDown(signal));

try {
  service = await startService(config);
} catch (error) {
  // Whoever starts the service needs the reason in words, not a trace of where it surfaced.
  console.error(`The service did not start: ${explainStartFailure(error, config, embeddedPostgresInstalled())}`);
  process.exit(1);
}
const database = config.databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL';
service.log.info(
  { url: service.url || undefined, database },
  service.url ? `video download service listening on ${service.url} (${database}, role ${config.role})` : `video download worker started (role ${config.role})`,
);
if (stopSignal) shutDown(stopSignal);
