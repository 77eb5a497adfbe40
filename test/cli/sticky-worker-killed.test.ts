import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcess, runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * Two workers on the task queue, and the one that ran the connection's workflow killed with
 * SIGKILL: Temporal keeps the workflow pinned to the dead worker's own queue (its cache) for
 * the worker's sticky timeout before any worker may take its tasks and queries. With the SDK's
 * 10 s, as long as the commands' own deadline, `ebsync sync` and `ebsync connections` said "no
 * worker runs it" while the other worker was polling (found black-box, 2 runs of 4).
 */
let stack: CliStack;
let second: CliProcess | undefined;
const CONNECTION = 'sticky-killed';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'sticky-killed',
    sandbox: { seed: { leads: 5, events: 0 } },
    connect: CONNECTION,
  });
}, 180_000);

afterAll(async () => {
  await second?.stop('SIGTERM', 30_000).catch(() => second?.killAll());
  await stack?.close();
});

describe('the worker that ran a connection killed, another one polling', () => {
  it('ebsync connections <id> is answered by the other worker', async () => {
    // The connect ran on the stack's worker: the connection's workflow is cached there.
    second = new CliProcess(['worker'], stack.env);
    await second.waitForLine(/worker started/, 90_000);
    await stack.worker.stop('SIGKILL', 10_000);
    const run = await runCli(['connections', CONNECTION], stack.env, 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/active/);
  }, 120_000);
});
