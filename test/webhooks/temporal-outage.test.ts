import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createRecordActivities } from '../../activities/mirror/refresh-record.js';
import { findTemporalCli } from '../../worker/temporal-cli.js';
import { recordHandOff } from '../../worker/record-hand-off.js';
import { createReceiver } from '../../webhooks/receiver.js';
import { freePort } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  destinationColumn,
  eventually,
  hintBody,
  newSecret,
  post,
  recordDeps,
  standardHeaders,
  type Sent,
} from './deliveries.js';

/**
 * Temporal goes away under a running receiver: deliveries are answered 503 (so the sender
 * retries), and once Temporal is back the retried deliveries are applied. A dev server of
 * this file's own, on a fixed port, stopped and started again.
 */
let ts: TestSandbox;
let dir: string;
let deps: ReturnType<typeof recordDeps>;

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  ts = await startTestSandbox({ https: true, seed: { leads: 30, events: 2 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-outage-'));
  deps = recordDeps(ts, dir);
});

afterAll(async () => {
  await deps?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('answers 503 while Temporal is stopped, and applies the retried deliveries after it returns', async () => {
  const port = await freePort();
  const executable = await findTemporalCli();
  const startServer = (): Promise<TestWorkflowEnvironment> =>
    TestWorkflowEnvironment.createLocal({
      server: { executable, port, ip: '127.0.0.1', log: { format: 'pretty', level: 'error' } },
    });
  const secret = newSecret();
  const destination = `sqlite:${join(dir, 'mirror.db')}`;
  const taskQueue = 'outage';
  const connection = Connection.lazy({ address: `127.0.0.1:${port}` });
  const app = createReceiver({
    hookOf: () => Promise.resolve({ secret, destination }),
    handOff: recordHandOff(new Client({ connection }), {
      taskQueue,
      debounceMs: 50,
      timeoutMs: 2_000,
    }),
    scheme: 'standard',
    bodyLimit: 64 * 1024,
    allowUnsigned: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/webhooks/shop`;
  const deliver = (id: string, lead: number): Promise<Sent> => {
    const body = hintBody(id, 'lead', lead);
    return post(url, body, standardHeaders(secret, id, body));
  };
  const names = (): Map<string, unknown> =>
    destinationColumn(join(dir, 'mirror.db'), 'leads', 'first_name');
  const withWorker = async (
    env: TestWorkflowEnvironment,
    fn: () => Promise<void>,
  ): Promise<void> => {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: createRecordActivities(deps),
    });
    await worker.runUntil(fn());
  };

  try {
    let env = await startServer();
    ts.sb.admin.patchRecord('lead', 3, { first_name: 'Before the outage' });
    await withWorker(env, async () => {
      expect((await deliver('evt_before', 3)).status).toBe(200);
      await eventually(
        () => names().get('3') === 'Before the outage',
        60_000,
        'first edit applied',
      );
    });
    await env.teardown();

    ts.sb.admin.patchRecord('lead', 4, { first_name: 'During the outage' });
    const refused = await deliver('evt_during', 4);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      meta: { status: 'error' },
      reason: 'temporal_unavailable',
    });

    env = await startServer();
    try {
      await withWorker(env, async () => {
        // The sender retries the same delivery until it gets a 2xx, as senders do after 503.
        await eventually(
          async () => (await deliver('evt_during', 4)).status === 200,
          90_000,
          'the retried delivery accepted once Temporal is back',
        );
        await eventually(
          () => names().get('4') === 'During the outage',
          60_000,
          'retried edit applied',
        );
      });
    } finally {
      await env.teardown();
    }
  } finally {
    await app.close();
    await connection.close();
  }
}, 300_000);
