import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

// Tooling, not the service: here because the tests' support and the bench both use it and may not
// import each other; the build (tsconfig.build.json) takes only src/.
//
// The configuration of a private nginx: Debian's nginx run in a directory of its own with one
// worker process and sendfile on, every path it writes to inside that directory, so it never
// touches the system's configuration or logs. And the configuration FILE_OFFLOAD=nginx expects in
// front of the service, as docs/operating.md gives it: the tests check that it works, the
// bench measures it.

export type NginxConfigOptions = {
  /** Blocks of the http context beside the server, such as an `upstream` (see offloadUpstream). */
  http?: string;
  /** The directives that log requests (a log_format and an access_log); no access log when absent. */
  accessLog?: string;
};

/** Writes a configuration with one server on 127.0.0.1:`port` whose body is `server`; returns its file. */
export async function writeNginxConfig(dir: string, port: number, server: string, options: NginxConfigOptions = {}): Promise<string> {
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
  ${options.accessLog ?? 'access_log off;'}
  sendfile on;
  tcp_nopush on;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  default_type application/octet-stream;
  ${options.http ?? ''}
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

/** The service behind nginx, as docs/operating.md gives it, for offloadServer: connections kept open between requests. */
export function offloadUpstream(service: string): string {
  return `
  upstream vds {
    server ${new URL(service).host};
    keepalive 32;
    keepalive_timeout 4s;
  }`;
}

/**
 * The server body of FILE_OFFLOAD=nginx, as docs/operating.md gives it: everything goes to the service
 * (offloadUpstream), and the internal location serves DATA_DIR/files/ when the service answers
 * with X-Accel-Redirect.
 */
export function offloadServer(filesDir: string, location = '/_vds_files/'): string {
  return `
    location / {
      proxy_pass http://vds;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
    location ${location} {
      internal;
      alias ${filesDir}/;
    }`;
}
