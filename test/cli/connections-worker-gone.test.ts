import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * The worker stopped a moment ago: Temporal lists its pollers for minutes after, so the check
 * for a worker passed, and `ebsync connections` waited out its 10 s query deadline and `ebsync
 * connect` (a connection that exists) its 30 s before saying no worker answered. A query not
 * answered within a second now has the task queue probed, and none taking the probe ends the
 * command with one line naming the queue and how to start a worker.
 */
let stack: CliStack;
const CONNECTION = 'worker-gone';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'worker-gone',
    sandbox: { seed: { leads: 5, events: 0 } },
    connect: CONNECTION,
  });
  await stack.worker.stop('SIGTERM', 30_000);
}, 180_000);

afterAll(async () => {
  await stack?.close();
});

/** Under the 10 s (connections) and 30 s (connect) the commands waited before, with room for a loaded machine. */
const QUICK_MS = 9_500;

describe('a worker stopped a moment ago', () => {
  for (const args of [
    ['connections'],
    ['connections', CONNECTION],
    ['connect', '--api-key', '--name', CONNECTION],
    ['connections', 'pause', CONNECTION],
  ]) {
    it(`ebsync ${args.join(' ')} says at once that no worker polls the task queue`, async () => {
      const started = Date.now();
      const run = await runCli(args, stack.env, 60_000);
      const took = Date.now() - started;
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toBe(
        `ebsync: no worker polls task queue '${stack.env.TEMPORAL_TASK_QUEUE}' on ${stack.env.TEMPORAL_ADDRESS} ` +
          `(one polled it in the last 2 minutes, but none took a new workflow within 3 s); ` +
          `start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again\n`,
      );
      expect(took).toBeLessThan(QUICK_MS);
    }, 60_000);
  }

  it('ebsync connect of a new connection says the connection is kept (exit 4)', async () => {
    const started = Date.now();
    const run = await runCli(['connect', '--api-key', '--name', 'kept-new'], stack.env, 60_000);
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).toMatch(
      /^ebsync: no worker polls task queue .*; the request is kept and is carried out when a worker runs the connection's workflow\n$/,
    );
    expect(Date.now() - started).toBeLessThan(QUICK_MS);
  }, 60_000);
});
