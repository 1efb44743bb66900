import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import getPort from 'get-port';
import { startServer, type Server } from './processes.ts';

// nginx, when it is installed, is the reference for serving files: one worker process (like the
// service's one Node process) with sendfile, as a distribution's default configuration has it.
// Every path it would write to is inside `dir`, so it runs without touching the system's.

export async function startNginx(nginx: string, root: string, dir: string): Promise<Server> {
  await mkdir(path.join(dir, 'temp'), { recursive: true });
  const port = await getPort({ host: '127.0.0.1' });
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, 'temp', name)};`;
  const config = `
daemon off;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log stderr;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`;
  const file = path.join(dir, 'nginx.conf');
  await writeFile(file, config);
  return startServer(nginx, ['-p', dir, '-c', file], { log: path.join(dir, 'nginx.log'), port });
}
