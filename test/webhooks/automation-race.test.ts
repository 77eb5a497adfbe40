import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteAutomationStore, type AutomationStore } from '../../store/automation-endpoints.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { webhookDrainWorkflow } from '../../workflows/drain.js';
import { drainWorkflowId, inboxWakeSignal } from '../../workflows/drain-types.js';
import { endpointAt } from '../helpers/forward.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { destinationColumn, eventually, recordDeps, webhookActivities } from './deliveries.js';
import { inboxRows } from './flood.js';

/**
 * A change whose notice waits in the inbox while a mirror pass writes the record first (the
 * connection paused, the 15-minute incremental schedule, a backlog under a rate limit): the
 * drain then re-read the record, found the hash the pass had written and forwarded nothing, so
 * the endpoint never got the change. Found by a black-box tester. Here the pass runs between
 * the notice's arrival and the drain, so the race happens every time.
 */
interface Call {
  type: string;
  id: string;
  webhookId: string;
}

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
let deps: ReturnType<typeof recordDeps>;
let store: AutomationStore;
let hookServer: Server;
let hookUrl: string;
const calls: Call[] = [];
const connectionId = 'race-shop';
const keyLine = generateKeyLine('race');
const [keyId, keyText] = keyLine.split(':') as [string, string];
const codec = new EncryptionCodec([{ id: keyId, key: Buffer.from(keyText, 'base64') }]);

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 12, events: 2 } });
  temporal = await connectTemporal();
  dir = mkdtempSync(join(tmpdir(), 'ebsync-automation-race-'));
  deps = recordDeps(ts, dir);
  store = sqliteAutomationStore(join(dir, 'webhooks.db'), codec);
  hookServer = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        type: string;
        data: { id: string };
      };
      calls.push({
        type: body.type,
        id: body.data.id,
        webhookId: String(request.headers['webhook-id']),
      });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`;
  await store.add({
    ...endpointAt('race-hook', hookUrl),
    filters: { resources: ['leads'], actions: [], connections: [] },
  });
}, 120_000);

afterAll(async () => {
  hookServer?.close();
  store?.close();
  await deps?.close();
  await temporal?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const destinationFile = (): string => join(dir, 'mirror.db');
const destination = (): string => `sqlite:${destinationFile()}`;

/** A notice as the receiver stores it on a delivery. */
async function noticeOf(deliveryId: string, recordId: number, action: string): Promise<void> {
  const stored = await (
    await deps.inbox()
  ).accept({
    connectionId,
    deliveryId,
    resource: 'leads',
    recordId: String(recordId),
    action,
    occurredAt: null,
  });
  expect(stored).toBe('stored');
}

/** A mirror pass of the leads, run to its end on a task queue of its own. */
async function pass(mode: 'full' | 'incremental'): Promise<void> {
  await runMirrorPass(
    temporal,
    deps,
    { connectionId, destination: destination(), subjects: ['leads'], mode },
    'race-pass',
  );
}

/** Runs the connection's drain until these notices are applied and their changes are sent on. */
async function drain(deliveryIds: string[]): Promise<void> {
  const taskQueue = temporal.taskQueue();
  const client = new Client({
    connection: temporal.client.connection,
    dataConverter: { payloadCodecs: [codec] },
  });
  await temporal.withWorker(
    {
      taskQueue,
      activities: webhookActivities(deps, temporal.client, taskQueue, { store, codec }),
      dataConverter: { payloadCodecs: [codec] },
    },
    async () => {
      const handle = await client.workflow.signalWithStart(webhookDrainWorkflow, {
        taskQueue,
        workflowId: `${drainWorkflowId(connectionId)}-${taskQueue}`,
        args: [{ connectionId, destination: destination() }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination: destination() }],
      });
      const inbox = await deps.inbox();
      await eventually(
        async () => {
          const rows = await inboxRows(`sqlite:${join(dir, 'store.db')}`, connectionId);
          return (
            deliveryIds.every((id) => rows.get(id) === true) &&
            (await inbox.leftoverChanges(connectionId, new Date(Date.now() + 60_000), 10))
              .length === 0
          );
        },
        60_000,
        `${deliveryIds.join(', ')} applied and forwarded`,
      );
      // Anything the drain would send still, it sends within this.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await handle.terminate('test over');
    },
  );
}

describe('a change a mirror pass writes before its notice is drained', () => {
  it('reaches the endpoint once all the same', async () => {
    ts.sb.admin.patchRecord('lead', 3, { first_name: 'Raced' });
    await noticeOf('evt_race_1', 3, 'updated');
    // The pass comes first: the mirror has the change before the drain reads the notice.
    await pass('incremental');
    expect(destinationColumn(destinationFile(), 'leads', 'first_name').get('3')).toBe('Raced');

    await drain(['evt_race_1']);
    expect(calls.map((c) => [c.type, c.id])).toEqual([['leads.written', '3']]);

    // A notice that finds the record as it was sent before sends nothing: once per change.
    await noticeOf('evt_race_2', 3, 'updated');
    await drain(['evt_race_2']);
    expect(calls.map((c) => [c.type, c.id])).toEqual([['leads.written', '3']]);
  }, 180_000);

  it('a deletion a full pass found first is sent once all the same', async () => {
    calls.length = 0;
    ts.sb.admin.patchRecord('lead', 5, { first_name: 'Told of' });
    await noticeOf('evt_race_3', 5, 'updated');
    await drain(['evt_race_3']);
    expect(calls.map((c) => [c.type, c.id])).toEqual([['leads.written', '5']]);

    ts.sb.admin.deleteRecord('lead', 5);
    await noticeOf('evt_race_4', 5, 'deleted');
    // A full pass's sweep re-reads lead 5, gets 404 and marks it deleted before the drain.
    await pass('full');
    expect(destinationColumn(destinationFile(), 'leads', 'first_name').has('5')).toBe(false);

    await drain(['evt_race_4']);
    expect(calls.map((c) => [c.type, c.id])).toEqual([
      ['leads.written', '5'],
      ['leads.deleted', '5'],
    ]);
    // Told again of it: nothing more.
    await noticeOf('evt_race_5', 5, 'deleted');
    await drain(['evt_race_5']);
    expect(calls).toHaveLength(2);
  }, 240_000);
});
