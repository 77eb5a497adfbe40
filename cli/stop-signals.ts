/**
 * Resolves on the first SIGINT or SIGTERM. It listens from the call on, so a long-running
 * command calls it before it says it is ready: a signal sent as soon as that line is read
 * (a script, a test) must reach this handler, not Node's default, which ends the process at
 * once and leaves what it started running.
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
