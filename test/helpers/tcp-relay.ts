import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpRelay {
  port: number;
  /** Closes the listener and every connection through it: the target is away. */
  stop(): Promise<void>;
  /** Listens again on the same port: the target is back. */
  start(): Promise<void>;
  /**
   * Keeps the port but ends every connection, those open and those to come, until `accept`:
   * the target is away, and no other process can take the port meanwhile.
   */
  refuse(): void;
  accept(): void;
}

/**
 * A TCP relay to a test's Temporal (or any address): closing it is Temporal going away for a
 * client behind it (the shared dev server goes on for the other tests), opening it again
 * brings it back.
 */
export async function tcpRelay(address: string): Promise<TcpRelay> {
  const [targetHost, targetPort] = [
    address.slice(0, address.lastIndexOf(':')),
    address.slice(address.lastIndexOf(':') + 1),
  ];
  const sockets = new Set<Socket>();
  let refusing = false;
  let listener: Server | undefined;
  let port = 0;
  const start = () =>
    new Promise<void>((resolve) => {
      listener = createServer((inbound) => {
        if (refusing) {
          inbound.on('error', () => undefined).destroy();
          return;
        }
        const outbound = connect(Number(targetPort), targetHost);
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s)).on('error', () => undefined);
        }
        inbound.pipe(outbound).pipe(inbound);
      });
      listener.listen(port, '127.0.0.1', () => {
        const a = listener!.address();
        port = typeof a === 'object' && a ? a.port : 0;
        resolve();
      });
    });
  await start();
  return {
    port,
    start,
    refuse: () => {
      refusing = true;
      for (const s of sockets) s.destroy();
    },
    accept: () => {
      refusing = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        listener?.close(() => resolve());
      }),
  };
}
