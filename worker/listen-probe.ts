import { createServer } from 'node:net';

/**
 * Binds `host:port` for a moment and lets it go, before a server of another process (the
 * Temporal dev server, Postgres) is started there: resolves with the port bound (a free one
 * for 0), or rejects with the bind's own error (EADDRINUSE, EACCES, …, its code and syscall
 * kept), which callers say in words. The child would otherwise fail on its own, in its
 * own words, after its start-up.
 */
export function probeListen(host: string, port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(port, host, () => {
      const address = probe.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      probe.close(() => resolvePort(bound));
    });
  });
}
