import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { killedWorkerRig } from './killed-worker-rig.js';
import { progressOf } from './progress.js';
import { chainHistory, failedRuns } from './run-histories.js';
import { expectMirrorOfSource } from './source-truth.js';

// The size: 20,000 leads (and the 500 events the sandbox seeds with them), at the
// spec's reach limit, so the leads are split by filters as against a real business.
const LEADS = 20_000;
const REACH = 10_000;
const PER = 100;

const rig = killedWorkerRig(
  'kills',
  { reachLimit: REACH, seed: { leads: LEADS } },
  {
    reachLimit: REACH,
    per: PER,
  },
);

describe(`a ${LEADS.toLocaleString('en')}-lead backfill whose worker is SIGKILLed 3 times`, () => {
  it('completes, no run fails, and the destination equals the source', async () => {
    const { ts, temporal } = rig;
    const taskQueue = temporal.taskQueue();
    const destination = `sqlite:${join(rig.dir, 'mirror.db')}`;
    const start = () => rig.start(taskQueue);
    let worker = await start();
    const handle = await temporal.client.workflow.start(mirrorWorkflow, {
      taskQueue,
      workflowId: `mirror-kills-${taskQueue}`,
      args: [
        {
          connectionId: 'c1',
          destination,
          subjects: ['leads', 'events', 'appointments'],
          mode: 'full',
        },
      ],
    });

    // Each kill comes after the worker before it made progress of its own, mid-write or
    // mid-read wherever that happens to be. What the killed worker had in flight is retried
    // once its heartbeat timeout (20 s) passes: most of this test's time.
    const kills: number[] = [];
    for (const records of [2_000, 12_000, 24_000]) {
      const seen = await progressOf(handle, (p) => p.counts.read >= records);
      expect(seen.phase, 'killed during the backfill').toBe('reading');
      await worker.kill();
      kills.push(seen.counts.read);
      worker = await start();
    }
    expect(kills).toHaveLength(3);

    const summary = await handle.result();
    const runs = await chainHistory(temporal.client, handle.workflowId, handle.firstExecutionRunId);
    expect(failedRuns(runs)).toEqual([]);
    await expectMirrorOfSource(ts.sb, destination, summary);
    expect(ts.internalErrors).toEqual([]);
    await worker.stop();
  }, 900_000);
});
