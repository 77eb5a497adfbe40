import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMirrorSchedule } from '../../cli/schedules.js';
import { startDevServer, type DevServer } from '../../worker/dev-server.js';
import { closedPort } from '../helpers/ports.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { actionResults, eventually, mirrorWorker, scheduleConfig } from './schedule-worker.js';

let ts: TestSandbox;
let dir: string;
let server: DevServer | undefined;
const closers: (() => Promise<unknown>)[] = [];

/** A dev server of this test's own on an SQLite file, as `npm start` runs one. */
const startServer = (port: number, uiPort: number): Promise<DevServer> =>
  startDevServer({
    ip: '127.0.0.1',
    port,
    uiPort,
    dbFilename: join(dir, 'temporal.db'),
    namespace: 'default',
  });

/** A client and a mirror worker's connection to the server as it is now. */
async function connect(address: string) {
  const connection = await Connection.connect({ address });
  const native = await NativeConnection.connect({ address });
  closers.push(
    () => connection.close(),
    () => native.close(),
  );
  return { client: new Client({ connection }), native };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-schedule-restart-'));
  ts = await startTestSandbox({ https: true, seed: { leads: 30, events: 3 } });
}, 120_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await server?.stop();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a schedule across a restart of the Temporal dev server', () => {
  it('is still there afterwards and fires again', async () => {
    const [port, uiPort] = [await closedPort(), await closedPort()];
    server = await startServer(port, uiPort);
    const taskQueue = 'schedule-restart';
    const config = scheduleConfig(dir, server.address, taskQueue);
    const destination = `sqlite:${join(dir, 'mirror.db')}`;
    const bundlePath = inject('workflowBundlePath');

    const before = await connect(server.address);
    const handle = await createMirrorSchedule(before.client, config, {
      connectionId: 'schedrestart-c1',
      what: 'leads',
      destination,
      full: false,
      timing: { everyMs: 2_000 },
      catchupWindowMs: 60_000,
      jitterMs: 0,
    });
    const first = await mirrorWorker({
      connection: before.native,
      taskQueue,
      bundlePath,
      ts,
      dir,
    });
    await first.worker.runUntil(async () => {
      const d = await eventually('a first firing', async () => {
        const now = await handle.describe();
        return now.info.recentActions.length > 0 ? now : undefined;
      });
      const [result] = await actionResults(before.client, d.info.recentActions.slice(0, 1));
      expect(result?.outcome).toBe('mirrored');
    });
    await first.close();

    await server.stop();
    await new Promise((r) => setTimeout(r, 3_000));
    server = await startServer(port, uiPort);
    const restartedAt = Date.now();

    const after = await connect(server.address);
    const again = after.client.schedule.getHandle(handle.scheduleId);
    const described = await again.describe();
    expect(described.state.paused).toBe(false);
    expect(described.policies.overlap).toBe('BUFFER_ONE');

    const second = await mirrorWorker({
      connection: after.native,
      taskQueue,
      bundlePath,
      ts,
      dir,
    });
    await second.worker.runUntil(async () => {
      const fired = await eventually('a firing after the restart', async () => {
        const d = await again.describe();
        const late = d.info.recentActions.filter((a) => a.takenAt.getTime() >= restartedAt);
        return late.length > 0 ? late : undefined;
      });
      const [result] = await actionResults(after.client, fired.slice(0, 1));
      expect(result?.outcome).toBe('mirrored');
      await again.delete();
    });
    await second.close();
  }, 300_000);
});
