import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { findExecutable } from '../../src/core/executables.ts';

// Debian's nginx (apt-get install nginx), run with a generated configuration in a directory of
// its own: one worker process, sendfile on, every path it writes to inside that directory, so it
// never touches the system's configuration or logs.

/** The nginx on PATH (or in /usr/sbin, where Debian puts it), or an error that says how to get one. */
export function nginxPath(): string {
  const found = findExecutable(['nginx'], ['/usr/sbin']);
  if (!found) throw new Error("nginx is missing: install Debian's nginx package (apt-get install nginx)");
  return found;
}

/** Writes a configuration with one server on 127.0.0.1:`port` whose body is `server`; returns its file. */
export async function writeNginxConfig(dir: string, port: number, server: string): Promise<string> {
  await mkdir(path.join(dir, 'temp'), { recursive: true });
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
    ${server}
  }
}
`;
  const file = path.join(dir, 'nginx.conf');
  await writeFile(file, config);
  return file;
}

export type Nginx = { url: string; output(): string; stop(): Promise<void> };

/** Starts nginx with `server` as its one server's body, and waits until it accepts connections. */
export async function startNginx(dir: string, server: string): Promise<Nginx> {
  const port = await getPort({ host: '127.0.0.1' });
  const config = await writeNginxConfig(dir, port, server);
  const child = spawn(nginxPath(), ['-p', dir, '-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let printed = '';
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 50) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${printed}`);
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      break;
    if (waited > 10_000) {
      await stop();
      throw new Error(`nginx did not answer within 10 s:\n${printed}`);
    }
    await sleep(50);
  }
  return { url, output: () => printed, stop };
}

/**
 * The server body of FILE_OFFLOAD=nginx, as the README gives it: everything goes to the service,
 * and the internal location serves DATA_DIR/files/ when the service answers with X-Accel-Redirect.
 */
export function offloadServer(service: string, filesDir: string, location = '/_vds_files/'): string {
  return `
    location / {
      proxy_pass ${service};
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
    location ${location} {
      internal;
      alias ${filesDir}/;
    }`;
}
