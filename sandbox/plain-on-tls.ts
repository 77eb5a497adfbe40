import type { Server, Socket } from 'node:net';

/** The first byte of every TLS connection: a handshake record. */
const TLS_HANDSHAKE = 0x16;

/** The https address the plain request meant, from its request line and Host, if both read. */
function meant(head: string): string | undefined {
  const path = /^[A-Z]+ (\/[!-~]{0,500}) HTTP\/1\.[01]\r?\n/.exec(head)?.[1];
  const host = /\r?\nhost:[ \t]*([A-Za-z0-9.:[\]-]{1,260})[ \t]*\r?\n/i.exec(head)?.[1];
  return path !== undefined && host !== undefined ? `https://${host}${path}` : undefined;
}

/**
 * Makes a TLS server answer a plain-HTTP request with a 400 saying so: Node's TLS layer closed
 * such a connection without a byte, and the caller saw only an empty reply. The first bytes
 * of a connection tell: TLS opens with a handshake record; anything else gets the hint and the
 * connection closes. TLS connections go on to the server's own listeners, the bytes read put
 * back first. A connection silent for `timeoutMs` is closed, as the server closes an idle one.
 */
export function answerPlainHttp(server: Server, timeoutMs: number): void {
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const drop = (): void => {
      socket.destroy();
    };
    socket.on('error', drop);
    socket.setTimeout(timeoutMs, drop);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.setTimeout(0);
      socket.removeListener('timeout', drop);
      if (chunk[0] === TLS_HANDSHAKE) {
        socket.removeListener('error', drop);
        socket.unshift(chunk);
        for (const listener of listeners) listener.call(server, socket);
        return;
      }
      const url = meant(chunk.toString('latin1'));
      const body = `This port speaks HTTPS: ${url ? `send the request to ${url}` : 'send the request over TLS'}\n`;
      socket.end(
        'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
  });
}
