import { buildConnector, errors } from 'undici';

// undici 7 (the last line that runs on Node 20) asserts, from a socket 'end' listener, that its
// HTTP parser is not paused: a source that closes the connection while our side is reading slower
// than it sends (a body shorter than its Content-Length, with Connection: close, read from a
// paused stream) made that assertion throw outside any request, which ended the process. undici 8
// finishes the parse instead. Until it can be used here, an exception from an 'end' listener of a
// source connection fails that connection, and with it that request, as a socket error.

type ConnectorOptions = Parameters<typeof buildConnector>[0];

export function guardedConnector(options: ConnectorOptions): buildConnector.connector {
  const connect = buildConnector(options);
  return (connectOptions, callback) =>
    connect(connectOptions, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new errors.SocketError('no socket'), null);
        return;
      }
      const emit = socket.emit.bind(socket);
      socket.emit = ((event: string | symbol, ...args: unknown[]) => {
        if (event !== 'end') return emit(event, ...args);
        try {
          return emit(event, ...args);
        } catch {
          socket.destroy(new errors.SocketError('The source closed the connection before the whole response had been read.'));
          return true;
        }
      }) as typeof socket.emit;
      callback(null, socket);
    });
}
