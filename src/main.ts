import { explainStartFailure } from './config/explain.ts';
import { ConfigError, loadConfig } from './config/index.ts';
import { startService } from './service.ts';

// `npm start`: the API and a worker in one process (ROLE=api or ROLE=worker runs one of them).

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}

let service;
try {
  service = await startService(config);
} catch (error) {
  // Whoever starts the service needs the reason in words, not a trace of where it surfaced.
  console.error(`The service did not start: ${explainStartFailure(error, config)}`);
  process.exit(1);
}
const database = config.databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL';
service.log.info(
  { url: service.url || undefined, database },
  service.url ? `video download service listening on ${service.url} (${database}, role ${config.role})` : `video download worker started (role ${config.role})`,
);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    service.log.info(`${signal}: shutting down`);
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        service.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
