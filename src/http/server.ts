import type { Server } from 'node:http';
import { createApp, type AppDeps } from './app.ts';
import { answerClientErrors } from './client-errors.ts';

/** The API listening on `config.host:config.port`, its malformed requests answered as problems. */
export function listen(deps: AppDeps): Promise<Server> {
  const app = createApp(deps);
  return new Promise<Server>((resolve, reject) => {
    const listening = app.listen(deps.config.port, deps.config.host, (error?: Error) => (error ? reject(error) : resolve(listening)));
    answerClientErrors(listening);
  });
}
