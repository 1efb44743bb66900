import { connect } from 'node:net';

/**
 * HEAD `path` of `origin` over a socket of its own, read until the service closes it: its status
 * and whatever came after the blank line that ends the header block (nothing, for a HEAD).
 * supertest and Node's client never read a body after a HEAD, so only this shows one.
 */
export function rawHead(origin: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; afterHeaders: Buffer }> {
  const { hostname, port } = new URL(origin);
  const lines = [
    `HEAD ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(`${lines.join('\r\n')}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('error', reject);
    socket.once('end', () => {
      const whole = Buffer.concat(chunks);
      const end = whole.indexOf('\r\n\r\n');
      if (end === -1) return reject(new Error(`no whole header block: ${whole.toString('latin1')}`));
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(whole.toString('latin1'))?.[1]), afterHeaders: whole.subarray(end + 4) });
    });
  });
}
