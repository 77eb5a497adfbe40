import { createServer } from 'node:net';

/** A loopback port nothing listens on (it was free a moment ago). */
export function closedPort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
