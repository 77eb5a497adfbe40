import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { findTemporalCli } from '../../worker/temporal-cli.js';
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
  startTestReceiver,
  webhookActivities,
  type Sent,
} from './deliveries.js';

/**
 * Temporal goes away under a running receiver: deliveries are still answered 2xx, because the
 * receiver's 2xx waits for the store, not for Temporal; the drains' wake-ups are tried again
 * until Temporal is back, and then the notices are applied. A dev server of this file's own,
 * on a fixed port, stopped and started again (in memory: it comes back knowing nothing).
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

it('stores deliveries while Temporal is stopped, and applies them once it is back', async () => {
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
  const receiver = await startTestReceiver({
    hooks: new Map([['shop', { secret, destination }]]),
    deps,
    client: new Client({ connection }),
    taskQueue,
  });
  const deliver = (id: string, lead: number): Promise<Sent> => {
    const body = hintBody(id, 'lead', lead);
    return post(receiver.url('shop'), body, standardHeaders(secret, id, body));
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
      activities: webhookActivities(deps, env.client, taskQueue),
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
    const during = await deliver('evt_during', 4);
    expect(during.status).toBe(200);
    expect(during.body).toMatchObject({ meta: { status: 'ok' }, delivery_id: 'evt_during' });
    const pending = await (await deps.inbox()).pending('shop', 10);
    expect(pending.map((n) => n.deliveryId)).toEqual(['evt_during']);

    env = await startServer();
    try {
      await withWorker(env, async () => {
        // Nobody sends again: the receiver's own wake-up, tried until Temporal answers.
        await eventually(
          () => names().get('4') === 'During the outage',
          90_000,
          'the edit stored during the outage applied',
        );
      });
    } finally {
      await env.teardown();
    }
  } finally {
    await receiver.close();
    await connection.close();
  }
}, 300_000);
