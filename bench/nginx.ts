import getPort from 'get-port';
import { writeNginxConfig } from '../test/support/nginx.ts';
import { startServer, type Server } from './processes.ts';

// nginx is the reference for serving files: one worker process (like the service's one Node
// process) with sendfile, as a distribution's default configuration has it.

/** nginx serving the files under `root` itself. */
export async function startNginx(nginx: string, root: string, dir: string): Promise<Server> {
  const port = await getPort({ host: '127.0.0.1' });
  const file = await writeNginxConfig(dir, port, `root ${root};`);
  return startServer(nginx, ['-p', dir, '-c', file], { log: `${dir}/nginx.log`, port });
}
