import getPort from 'get-port';
import { offloadServer, offloadUpstream, writeNginxConfig, type NginxConfigOptions } from '../tools/nginx-config.ts';
import { startServer, type Server } from './processes.ts';

// nginx is the reference for serving files: one worker process (like the service's one Node
// process) with sendfile, as a distribution's default configuration has it.

/** nginx serving the files under `root` itself. */
export function startNginx(nginx: string, root: string, dir: string): Promise<Server> {
  return startWith(nginx, dir, `root ${root};`);
}

/** nginx as a source of media files: MP4s labelled video/mp4, as the distribution's mime.types has them. */
export function startFileNginx(nginx: string, root: string, dir: string): Promise<Server> {
  return startWith(nginx, dir, `root ${root}; types { video/mp4 mp4; }`);
}

/**
 * nginx serving the files under `root` at most `rate` a second per request (`limit_rate`, in
 * nginx's units: `8m` is 8 MiB), as hosts that throttle each connection do. Ranges on, one per
 * request, with nginx's strong ETag: a client may fetch a file in parts over several connections.
 * MP4s are labelled video/mp4, as the distribution's mime.types has them.
 */
export function startRateLimitedNginx(nginx: string, root: string, dir: string, rate: string): Promise<Server> {
  return startWith(nginx, dir, `root ${root}; types { video/mp4 mp4; } limit_rate ${rate}; max_ranges 1;`);
}

/** nginx in front of the service at `service`, sending the files under `filesDir` for it (FILE_OFFLOAD=nginx). */
export function startOffloadNginx(nginx: string, service: string, filesDir: string, dir: string): Promise<Server> {
  return startWith(nginx, dir, offloadServer(filesDir), { http: offloadUpstream(service) });
}

async function startWith(nginx: string, dir: string, server: string, options: NginxConfigOptions = {}): Promise<Server> {
  const port = await getPort({ host: '127.0.0.1' });
  const file = await writeNginxConfig(dir, port, server, options);
  return startServer(nginx, ['-p', dir, '-c', file], { log: `${dir}/nginx.log`, port });
}
