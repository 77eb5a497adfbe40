import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CliProcess } from '../helpers/cli.js';
import { connectTemporal, standInConnection, type TemporalHarness } from '../helpers/temporal.js';

/**
 * `ebsync sync` right after the worker stopped: the check for a worker passes (the server
 * remembers a poller for minutes), the pass starts, and no worker answers its progress. The
 * command used to wait in silence; it says once what it waits for, and Ctrl-C still detaches.
 */
let dir: string;
let temporal: TemporalHarness;
let endConnection: (() => Promise<void>) | undefined;
const name = `no-worker-${Date.now()}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-sync-no-worker-'));
  temporal = await connectTemporal();
});

afterAll(async () => {
  await endConnection?.();
  await temporal?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ebsync sync when the worker has just stopped', () => {
  it('says within seconds that no worker answers the pass, and detaches on Ctrl-C', async () => {
    const taskQueue = temporal.taskQueue();
    // A worker polled this queue a moment ago, and stopped.
    await temporal.withWorker(
      { taskQueue, activities: {} },
      () => new Promise((resolve) => setTimeout(resolve, 1_500)),
    );
    // The connection runs on that queue too (sync checks its queue before a pass): nothing
    // runs it now that the worker is gone.
    endConnection = await standInConnection(name, taskQueue);
    const sync = new CliProcess(
      ['sync', 'leads', '--connection', name, '--to', `sqlite:${join(dir, 'mirror.db')}`],
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: taskQueue,
        EBSYNC_DATA_DIR: join(dir, 'data'),
      },
    );
    try {
      const started = Date.now();
      while (!/no worker has answered/.test(sync.stderr)) {
        if (!sync.running || Date.now() - started > 60_000) {
          throw new Error(`no line about the worker: ${sync.stderr}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(sync.stderr).toContain(
        `no worker has answered this pass for 15 s: is one running on task queue '${taskQueue}'? ('ebsync worker' or 'npm start' starts one); the pass waits in Temporal until one does, and Ctrl-C stops watching it\n`,
      );
      expect(sync.stderr).toMatch(/started the mirror \(mirror-/);
      const stopped = await sync.stop('SIGINT', 30_000);
      expect(stopped.code).toBe(0);
      expect(stopped.stderr).toMatch(/detached: the sync goes on in Temporal/);
    } finally {
      sync.killAll();
      // The pass no worker will run.
      for await (const run of temporal.client.workflow.list({
        query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`,
      })) {
        await temporal.client.workflow.getHandle(run.workflowId).terminate('test over');
      }
    }
  }, 120_000);
});
