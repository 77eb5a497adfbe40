import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDevServer, type DevServer } from '../../worker/dev-server.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startMirrorWorker, type MirrorWorkerProcess } from '../fixtures/mirror-worker-process.js';
import { closedPort } from '../helpers/ports.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { chainHistory, failedRuns } from './run-histories.js';
import { progressOf } from './progress.js';
import { expectMirrorOfSource } from './source-truth.js';

const LEADS = 20_000;
const REACH = 10_000;
const PER = 100;

let ts: TestSandbox;
let dir: string;
let server: DevServer | undefined;
let connection: Connection | undefined;
let worker: MirrorWorkerProcess | undefined;

/** A dev server of this test's own (the run's shared one must not restart under others). */
const startServer = (port: number, uiPort: number): Promise<DevServer> =>
  startDevServer({
    ip: '127.0.0.1',
    port,
    uiPort,
    dbFilename: join(dir, 'temporal.db'),
    namespace: 'default',
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-restart-'));
  ts = await startTestSandbox({ https: true, reachLimit: REACH, seed: { leads: LEADS } });
}, 240_000);

afterAll(async () => {
  await worker?.kill();
  await connection?.close();
  await server?.stop();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Temporal dev server restarted in the middle of a backfill', () => {
  it('the pass goes on where it was, and the destination equals the source', async () => {
    const [port, uiPort] = [await closedPort(), await closedPort()];
    server = await startServer(port, uiPort);
    connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    const taskQueue = 'mirror-restart';
    const destination = `sqlite:${join(dir, 'mirror.db')}`;
    worker = await startMirrorWorker({
      temporalAddress: server.address,
      taskQueue,
      bundlePath: inject('workflowBundlePath'),
      sb: ts.sb,
      store: `sqlite:${join(dir, 'store.db')}`,
      reachLimit: REACH,
      per: PER,
      name: 'survivor',
    });
    const handle = await client.workflow.start(mirrorWorkflow, {
      taskQueue,
      workflowId: 'mirror-restart',
      args: [
        {
          connectionId: 'c1',
          destination,
          subjects: ['leads', 'events', 'appointments'],
          mode: 'full',
        },
      ],
    });
    const before = await progressOf(handle, (p) => p.counts.read >= 8_000);
    expect(before.phase, 'restarted during the backfill').toBe('reading');

    await server.stop();
    // Down long enough for the worker's polls and the activities' reports to fail.
    await new Promise((r) => setTimeout(r, 5_000));
    server = await startServer(port, uiPort);

    // The same worker process carries on once the server is back: nothing restarts it.
    const after = await progressOf(handle, (p) => p.counts.read > before.counts.read);
    expect(after.passId).toBe(before.passId);
    const summary = await handle.result();
    expect(worker.child.exitCode).toBeNull();
    const runs = await chainHistory(client, handle.workflowId, handle.firstExecutionRunId);
    expect(failedRuns(runs)).toEqual([]);
    await expectMirrorOfSource(ts.sb, destination, summary);
    expect(ts.internalErrors).toEqual([]);
  }, 900_000);
});
