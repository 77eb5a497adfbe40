import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startMirrorWorker, type MirrorWorkerProcess } from '../fixtures/mirror-worker-process.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { activityWorkers, chainHistory, failedRuns } from './run-histories.js';
import { expectMirrorOfSource } from './source-truth.js';

const LEADS = 20_000;
const REACH = 10_000;
const PER = 100;

let ts: TestSandbox;
let temporal: TemporalHarness;
const workers: MirrorWorkerProcess[] = [];

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, reachLimit: REACH, seed: { leads: LEADS } });
  temporal = await connectTemporal();
}, 240_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await temporal?.close();
  await ts?.close();
});

describe('two worker processes sharing one Postgres ledger and one Postgres destination', () => {
  it('run one backfill together, and the destination equals the source', async () => {
    const [store, destination] = await Promise.all([
      createTestDatabase('shared_store'),
      createTestDatabase('shared_mirror'),
    ]);
    const taskQueue = temporal.taskQueue();
    const names = ['worker-a', 'worker-b'];
    workers.push(
      ...(await Promise.all(
        names.map((name) =>
          startMirrorWorker({
            temporalAddress: inject('temporalAddress'),
            taskQueue,
            bundlePath: temporal.bundlePath,
            sb: ts.sb,
            store,
            reachLimit: REACH,
            per: PER,
            name,
          }),
        ),
      )),
    );
    const handle = await temporal.client.workflow.start(mirrorWorkflow, {
      taskQueue,
      workflowId: `mirror-shared-${taskQueue}`,
      args: [
        {
          connectionId: 'c1',
          destination,
          subjects: ['leads', 'events', 'appointments'],
          mode: 'full',
          concurrency: 8,
        },
      ],
    });
    const summary = await handle.result();
    const runs = await chainHistory(temporal.client, handle.workflowId, handle.firstExecutionRunId);
    expect(failedRuns(runs)).toEqual([]);
    await expectMirrorOfSource(ts.sb, destination, summary);

    // Both processes did part of the reading and writing.
    const byWorker = activityWorkers(runs, 'mirrorPage');
    const pages = (name: string) =>
      [...byWorker].filter(([who]) => who.startsWith(`${name}@`)).reduce((n, [, c]) => n + c, 0);
    for (const name of names) expect(pages(name), name).toBeGreaterThan(0);
    expect(pages('worker-a') + pages('worker-b')).toBe(
      [...byWorker.values()].reduce((a, b) => a + b, 0),
    );
    expect(ts.internalErrors).toEqual([]);
    await Promise.all(workers.map((w) => w.stop()));
  }, 900_000);
});
