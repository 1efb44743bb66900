import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { findExecutable } from '../../src/core/executables.ts';
import { decodedPath } from './request-target.ts';

// Debian's nginx (apt-get install nginx), run with a generated configuration in a directory of
// its own: one worker process, sendfile on, every path it writes to inside that directory, so it
// never touches the system's configuration or logs. With `log`, every request is written to an
// access log of that directory, one JSON object a line, for tests of what a client asked for.

/** The nginx on PATH (or in /usr/sbin, where Debian puts it), or an error that says how to get one. */
export function nginxPath(): string {
  const found = findExecutable(['nginx'], ['/usr/sbin']);
  if (!found) throw new Error("nginx is missing: install Debian's nginx package (apt-get install nginx)");
  return found;
}

export type NginxOptions = {
  /** Log every request to `access.log` in the directory (see `Nginx.requests`); off by default. */
  log?: boolean;
  /** Blocks of the http context beside the server, such as an `upstream` (see offloadUpstream). */
  http?: string;
};

/** A request as the access log has it. */
export type NginxRequest = {
  method: string;
  /** The request target as sent ($request_uri): percent-encoded, with its query string. */
  target: string;
  /** The target's path, percent-decoded, without the query string. */
  path: string;
  status: number;
  /** The Range header, when there was one. */
  range?: string;
  ifRange?: string;
  acceptEncoding?: string;
  /** The Content-Encoding nginx answered with (gzip, or none). */
  contentEncoding?: string;
  /** Body bytes nginx sent (fewer than the file when the client went away first). */
  bodyBytes: number;
  /** Which connection carried it, and how many requests that connection had carried by then. */
  connection: number;
  connectionRequests: number;
};

const LOG_FORMAT = `log_format vds_test escape=json '{"method":"$request_method","target":"$request_uri","status":"$status","range":"$http_range","ifRange":"$http_if_range","acceptEncoding":"$http_accept_encoding","contentEncoding":"$sent_http_content_encoding","bodyBytes":"$body_bytes_sent","connection":"$connection","connectionRequests":"$connection_requests"}';`;

function parseLogLine(line: string): NginxRequest {
  const raw = JSON.parse(line) as Record<string, string>;
  const optional = (value: string | undefined) => (value ? value : undefined);
  return {
    method: raw.method!,
    target: raw.target!,
    path: decodedPath(raw.target!),
    status: Number(raw.status),
    range: optional(raw.range),
    ifRange: optional(raw.ifRange),
    acceptEncoding: optional(raw.acceptEncoding),
    contentEncoding: optional(raw.contentEncoding),
    bodyBytes: Number(raw.bodyBytes),
    connection: Number(raw.connection),
    connectionRequests: Number(raw.connectionRequests),
  };
}

/** Writes a configuration with one server on 127.0.0.1:`port` whose body is `server`; returns its file. */
export async function writeNginxConfig(dir: string, port: number, server: string, options: NginxOptions = {}): Promise<string> {
  await mkdir(path.join(dir, 'temp'), { recursive: true });
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, 'temp', name)};`;
  const accessLog = options.log ? `${LOG_FORMAT}\n  access_log ${path.join(dir, 'access.log')} vds_test;` : 'access_log off;';
  const config = `
daemon off;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log stderr;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 1024; }
http {
  ${accessLog}
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

export type Nginx = {
  url: string;
  output(): string;
  /** Every request logged so far, in the order nginx finished them (only when started with `log`). */
  requests(): Promise<NginxRequest[]>;
  stop(): Promise<void>;
};

/** Starts nginx with `server` as its one server's body, and waits until it accepts connections. */
export async function startNginx(dir: string, server: string, options: NginxOptions = {}): Promise<Nginx> {
  const port = await getPort({ host: '127.0.0.1' });
  const config = await writeNginxConfig(dir, port, server, options);
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
  const requests = async () => {
    if (!options.log) throw new Error('this nginx was started without { log: true }');
    const text = await readFile(path.join(dir, 'access.log'), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((line) => line.trim())
      .map(parseLogLine);
  };
  return { url, output: () => printed, requests, stop };
}

/** The service behind nginx, as the README gives it, for offloadServer: connections kept open between requests. */
export function offloadUpstream(service: string): string {
  return `
  upstream vds {
    server ${new URL(service).host};
    keepalive 32;
    keepalive_timeout 4s;
  }`;
}

/**
 * The server body of FILE_OFFLOAD=nginx, as the README gives it: everything goes to the service
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
