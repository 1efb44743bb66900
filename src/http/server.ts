import { createServer, type Server } from 'node:http';
import { createApp, type AppDeps } from './app.ts';
import { answerClientErrors } from './client-errors.ts';

/** The API listening on `config.host:config.port`, its malformed requests answered as problems. */
export async function listen(deps: AppDeps): Promise<Server> {
  const { listener, warmedUp } = createApp(deps);
  // What would otherwise hold the event loop on the first requests is done before there are any.
  await warmedUp;
  const listening = createServer(listener);
  answerClientErrors(listening);
  return new Promise<Server>((resolve, reject) => {
    listening.once('error', reject);
    listening.listen(deps.config.port, deps.config.host, () => {
      listening.off('error', reject);
      resolve(listening);
    });
  });
}
