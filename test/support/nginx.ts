import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { findExecutable } from '../../src/core/executables.ts';
import { writeNginxConfig } from '../../tools/nginx-config.ts';
import { decodedPath } from './request-target.ts';

// Debian's nginx (apt-get install nginx), run with a configuration of tools/nginx-config.ts in a
// directory of its own. With `log`, every request is written to an access log of that directory,
// one JSON object a line, for tests of what a client asked for.

/** The nginx on PATH (or in /usr/sbin, where Debian puts it), or an error that says how to get one. */
export function nginxPath(): string {
  const found = findExecutable(['nginx'], ['/usr/sbin']);
  if (!found) throw new Error("nginx is missing: install Debian's nginx package (apt-get install nginx)");
  return found;
}

export type NginxOptions = {
  /** Log every request to `access.log` in the directory (see `Nginx.requests`); off by default. */
  log?: boolean;
  /** Blocks of the http context beside the server, such as an `upstream` (see offloadUpstream in tools/nginx-config.ts). */
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
  const accessLog = options.log ? `${LOG_FORMAT}\n  access_log ${path.join(dir, 'access.log')} vds_test;` : undefined;
  const config = await writeNginxConfig(dir, port, server, { http: options.http, accessLog });
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
