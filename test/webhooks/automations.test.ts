import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sqliteAutomationStore, type AutomationStore } from '../../store/automation-endpoints.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, standInConnection, type TemporalHarness } from '../helpers/temporal.js';
import {
  destinationColumn,
  eventually,
  hintBody,
  post,
  recordDeps,
  standardHeaders,
  webhookActivities,
  registerAtSandbox,
} from './deliveries.js';
import { inboxRows } from './flood.js';
import { Client } from '@temporalio/client';
import { webhookDrainWorkflow } from '../../workflows/drain.js';
import { drainWorkflowId, inboxWakeSignal } from '../../workflows/drain-types.js';
import { historyText } from '../helpers/history-text.js';

/**
 * Automations out, end to end: a staff edit at the sandbox, its webhook through `ebsync
 * webhooks serve`, the connection's drain writing the destination row, and the fresh record
 * POSTed signed to a user's endpoint (a small server here that checks the signature).
 */
interface Hook {
  url: string;
  /** Verified calls: webhook-id and parsed body. */
  calls: { id: string; body: { type: string; data: { id: string; record: unknown } } }[];
  /** Calls whose signature did not verify. */
  forged: number;
  answer: number;
  secret: string;
  server: Server;
}

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
let env: Record<string, string>;
let destinationFile: string;
let deps: ReturnType<typeof recordDeps>;
let stopConnection: (() => Promise<void>) | undefined;
let store: AutomationStore;
let serve: CliProcess | undefined;
let receiverBase: string;
let sandboxSecret: string;
const hooks: Hook[] = [];
const keyLine = generateKeyLine('automations');
const [keyId, keyText] = keyLine.split(':') as [string, string];
const codec = new EncryptionCodec([{ id: keyId, key: Buffer.from(keyText, 'base64') }]);

async function startHook(answer: number): Promise<Hook> {
  const hook: Hook = { url: '', calls: [], forged: 0, answer, secret: '', server: createServer() };
  hook.server.on('request', (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([k, v]) => [k, String(v)]),
        );
        hook.calls.push({
          id: String(request.headers['webhook-id']),
          body: new Webhook(hook.secret).verify(body, headers) as Hook['calls'][number]['body'],
        });
      } catch {
        hook.forged += 1;
      }
      response.writeHead(hook.answer).end();
    });
  });
  await new Promise<void>((resolve) => hook.server.listen(0, '127.0.0.1', resolve));
  hook.url = `http://127.0.0.1:${(hook.server.address() as AddressInfo).port}/hooks/secret-token`;
  hooks.push(hook);
  return hook;
}

/** Adds the endpoint; its stderr (a note on `--connections`) is returned, else it is empty. */
async function addEndpoint(name: string, hook: Hook, ...flags: string[]): Promise<string> {
  const added = await runCli(['webhooks', 'endpoints', 'add', name, hook.url, ...flags], env);
  expect(added.code).toBe(0);
  if (!flags.includes('--connections')) expect(added.stderr).toBe('');
  const secret = /signing secret .*: (whsec_\S+)/.exec(added.stdout)?.[1];
  expect(secret).toBeDefined();
  hook.secret = secret!;
  return added.stderr;
}

async function endpointsJson(): Promise<{ name: string; state: string; url: string }[]> {
  const listed = await runCli(['webhooks', 'endpoints', 'list', '--json'], env);
  expect(listed.code).toBe(0);
  return JSON.parse(listed.stdout) as { name: string; state: string; url: string }[];
}

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 120, events: 5 } });
  temporal = await connectTemporal();
  dir = mkdtempSync(join(tmpdir(), 'ebsync-automations-'));
  destinationFile = join(dir, 'mirror.db');
  const port = await freePort();
  receiverBase = `http://127.0.0.1:${port}`;
  env = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ENCRYPTION_KEYS: keyLine,
    EBSYNC_LOG_FORMAT: 'json',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: temporal.taskQueue(),
    EBS_CA_FILE: ts.sb.caFile ?? '',
    EBSYNC_WEBHOOK_PORT: String(port),
    EBSYNC_STORE_URL: `sqlite:${join(dir, 'store.db')}`,
  };
  deps = recordDeps(ts, dir);
  // The drain here reads with the sandbox's key (deps); register asks only that it exists.
  stopConnection = await standInConnection('auto-shop');
  const registered = await registerAtSandbox(ts.sb, env, 'auto-shop', `sqlite:${destinationFile}`);
  expect(registered.code, registered.stderr).toBe(0);
  sandboxSecret = ts.sb.admin.webhooks()[0]!.secret;
  store = sqliteAutomationStore(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'), codec);
  serve = new CliProcess(['webhooks', 'serve'], env);
  await serve.waitForLine(/webhook receiver listening/, 60_000);
}, 120_000);

afterAll(async () => {
  serve?.killAll();
  for (const hook of hooks) hook.server.close();
  store?.close();
  await deps?.close();
  await stopConnection?.();
  await temporal?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function withWorker<T>(fn: () => Promise<T>): Promise<T> {
  return temporal.withWorker(
    {
      taskQueue: env.TEMPORAL_TASK_QUEUE!,
      // The worker forwards from the same webhooks.db the CLI writes endpoints to.
      activities: webhookActivities(deps, temporal.client, env.TEMPORAL_TASK_QUEUE!, {
        store,
        codec,
      }),
      dataConverter: { payloadCodecs: [codec] },
    },
    fn,
  );
}

const names = (): Map<string, unknown> => destinationColumn(destinationFile, 'leads', 'first_name');

/** Whether the drain applied the delivery (the inbox marks it). */
async function applied(deliveryId: string): Promise<boolean> {
  return (await inboxRows(env.EBSYNC_STORE_URL!, 'auto-shop')).get(deliveryId) === true;
}

describe('automations out', () => {
  it('a staff edit updates the destination row and calls the matching endpoint once, signed', async () => {
    const leadsHook = await startHook(200);
    const eventsHook = await startHook(200);
    await addEndpoint('crm-leads', leadsHook, '--types', 'leads', '--actions', 'written');
    await addEndpoint('crm-events', eventsHook, '--types', 'events');
    // The hook's URL carries a token: listed masked.
    expect((await endpointsJson()).map((e) => e.url)).toEqual([
      expect.not.stringContaining('secret-token'),
      expect.not.stringContaining('secret-token'),
    ]);

    await withWorker(async () => {
      ts.sb.admin.patchRecord('lead', 21, { first_name: 'Automated' });
      await eventually(
        () => names().get('21') === 'Automated' && leadsHook.calls.length > 0,
        60_000,
        'the edit in the destination and at the endpoint',
      );
      // The same delivery again (a sender's retry), and a new delivery with nothing changed:
      // each is read or dropped, neither fires the endpoint again.
      const again = hintBody('evt_auto_again', 'lead', 21);
      const sent = await post(
        `${receiverBase}/webhooks/auto-shop`,
        again,
        standardHeaders(sandboxSecret, 'evt_auto_again', again),
      );
      expect(sent.status).toBe(200);
      await eventually(() => applied('evt_auto_again'), 30_000, 'the second read');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    });
    expect(leadsHook.forged).toBe(0);
    expect(leadsHook.calls).toHaveLength(1);
    const call = leadsHook.calls[0]!;
    expect(call.id).toMatch(/^msg_/);
    expect(call.body.type).toBe('leads.written');
    expect(call.body.data.id).toBe('21');
    expect(JSON.stringify(call.body.data.record)).toContain('Automated');
    expect(eventsHook.calls).toHaveLength(0);

    const log = await runCli(['webhooks', 'deliveries', '--json'], env);
    const rows = JSON.parse(log.stdout) as { endpoint: string; status: string; recordId: string }[];
    expect(rows).toEqual([
      expect.objectContaining({ endpoint: 'crm-leads', status: 'delivered', recordId: '21' }),
    ]);
    const text = await runCli(['webhooks', 'deliveries'], env);
    expect(text.stdout).toMatch(/crm-leads\s+auto-shop\/leads\/21 written\s+delivered 200/);
    await runCli(['webhooks', 'endpoints', 'remove', 'crm-leads'], env);
    await runCli(['webhooks', 'endpoints', 'remove', 'crm-events'], env);
  }, 180_000);

  it('a deletion is sent once, and only for a record the mirror had live', async () => {
    const hook = await startHook(200);
    await addEndpoint('deletions', hook, '--types', 'leads', '--actions', 'deleted');
    const notice = async (id: string, recordId: number) => {
      const body = hintBody(id, 'lead', recordId);
      const sent = await post(
        `${receiverBase}/webhooks/auto-shop`,
        body,
        standardHeaders(sandboxSecret, id, body),
      );
      expect(sent.status).toBe(200);
      await eventually(() => applied(id), 30_000, `${id} applied`);
    };
    await withWorker(async () => {
      ts.sb.admin.patchRecord('lead', 41, { first_name: 'Soon gone' });
      await eventually(() => names().get('41') === 'Soon gone', 60_000, 'lead 41 mirrored');
      ts.sb.admin.deleteRecord('lead', 41);
      await eventually(() => hook.calls.length > 0, 60_000, 'the deletion sent');
      // Lead 41 again (gone already here), and twice a lead this mirror never had.
      await notice('evt_del_again', 41);
      await notice('evt_del_never_1', 987_657);
      await notice('evt_del_never_2', 987_657);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    });
    expect(hook.forged).toBe(0);
    expect(hook.calls.map((c) => [c.body.type, c.body.data.id])).toEqual([['leads.deleted', '41']]);
    await runCli(['webhooks', 'endpoints', 'remove', 'deletions'], env);
  }, 180_000);

  it('an endpoint answering 410 is disabled and called no more', async () => {
    const gone = await startHook(410);
    await addEndpoint('gone-hook', gone);
    await withWorker(async () => {
      ts.sb.admin.patchRecord('lead', 31, { first_name: 'Gone one' });
      await eventually(
        async () => (await store.list()).some((e) => e.disabledAt !== null),
        60_000,
        'the endpoint disabled',
      );
      ts.sb.admin.patchRecord('lead', 32, { first_name: 'Gone two' });
      await eventually(() => names().get('32') === 'Gone two', 60_000, 'the second edit applied');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    });
    expect(gone.calls).toHaveLength(1);
    expect((await endpointsJson()).find((e) => e.name === 'gone-hook')?.state).toBe('disabled');
    const rows = JSON.parse(
      (await runCli(['webhooks', 'deliveries', '--json', '--endpoint', 'gone-hook'], env)).stdout,
    ) as { status: string; httpStatus: number }[];
    expect(rows).toEqual([expect.objectContaining({ status: 'gone', httpStatus: 410 })]);
    // As docs/webhooks.md says: `enable` resumes it, with the secret the endpoint already has.
    const secretOf = async (): Promise<string | undefined> =>
      (await store.list()).find((e) => e.name === 'gone-hook')?.secret;
    const secret = await secretOf();
    const enabled = await runCli(['webhooks', 'endpoints', 'enable', 'gone-hook'], env);
    expect(enabled.stderr).toBe('');
    expect(enabled.stdout).toMatch(/^enabled endpoint gone-hook \(was: answered 410 Gone\)/);
    expect((await endpointsJson()).find((e) => e.name === 'gone-hook')?.state).toBe('active');
    expect(await secretOf()).toBe(secret);
    await runCli(['webhooks', 'endpoints', 'remove', 'gone-hook'], env);
  }, 180_000);

  it('an endpoint that keeps failing opens its breaker, and the records are still applied', async () => {
    const failing = await startHook(500);
    await addEndpoint('flaky-hook', failing);
    const ids = [51, 52, 53, 54, 55, 56];
    await withWorker(async () => {
      for (const id of ids) ts.sb.admin.patchRecord('lead', id, { first_name: `Flaky ${id}` });
      await eventually(
        () => ids.every((id) => names().get(String(id)) === `Flaky ${id}`),
        60_000,
        'every edit applied despite the failing endpoint',
      );
      await eventually(
        () => store.breaker('flaky-hook').openUntil > Date.now(),
        60_000,
        'the breaker open',
      );
      const seen = failing.calls.length;
      // While open, retries fail fast without touching the endpoint.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(failing.calls.length).toBe(seen);
    });
    expect((await endpointsJson()).find((e) => e.name === 'flaky-hook')?.state).toBe(
      'breaker open',
    );
    const rows = JSON.parse(
      (await runCli(['webhooks', 'deliveries', '--json', '--endpoint', 'flaky-hook'], env)).stdout,
    ) as { status: string }[];
    expect(rows.some((r) => r.status === 'breaker_open')).toBe(true);
    expect(rows.some((r) => r.status === 'delivered')).toBe(false);
    await runCli(['webhooks', 'endpoints', 'remove', 'flaky-hook'], env);
  }, 300_000);

  it('an attempt that got no answer says why in the delivery log, without the address', async () => {
    const dead = await startHook(200);
    await new Promise((resolve) => dead.server.close(resolve));
    await addEndpoint('dead-hook', dead);
    const failedRows = async () =>
      (
        JSON.parse(
          (await runCli(['webhooks', 'deliveries', '--json', '--endpoint', 'dead-hook'], env))
            .stdout,
        ) as { status: string; httpStatus: number | null; reason: string | null }[]
      ).filter((r) => r.status === 'failed');
    try {
      await withWorker(async () => {
        ts.sb.admin.patchRecord('lead', 61, { first_name: 'Nobody listens' });
        await eventually(
          async () => (await failedRows()).length > 0,
          60_000,
          'a failed attempt logged',
        );
      });
      // Changes other tests left owed may reach it first, and open its breaker: every attempt
      // that failed says why, whichever record it carried.
      const failed = await failedRows();
      expect(failed.length).toBeGreaterThan(0);
      for (const row of failed) {
        expect(row).toMatchObject({
          httpStatus: null,
          reason: 'connection refused, nothing listens there (ECONNREFUSED)',
        });
      }
      const text = await runCli(['webhooks', 'deliveries', '--endpoint', 'dead-hook'], env);
      expect(text.stdout).toMatch(
        /dead-hook\s+auto-shop\/leads\/\d+ written\s+failed \(connection refused, nothing listens there \(ECONNREFUSED\)\)\s+attempts=\d+/,
      );
      expect(text.stdout).not.toContain(new URL(dead.url).port);
    } finally {
      await runCli(['webhooks', 'endpoints', 'remove', 'dead-hook'], env);
    }
  }, 180_000);

  it('sends, from its next run, what a drain still owed endpoints when it continued as new', async () => {
    const connectionId = 'auto-left';
    const hook = await startHook(500);
    // Not a running connection of this task queue: taken (it may be connected later), and said.
    expect(await addEndpoint('leftover-hook', hook, '--connections', connectionId)).toBe(
      `ebsync: note: no connection named '${connectionId}' runs on task queue '${env.TEMPORAL_TASK_QUEUE}' now; ` +
        `the endpoint gets its changes once one is connected under that name ('ebsync connections' lists them)\n`,
    );
    ts.sb.admin.patchRecord('lead', 61, { first_name: 'Left over' });
    const inbox = await deps.inbox();
    await inbox.accept({
      connectionId,
      deliveryId: 'evt_left',
      resource: 'leads',
      recordId: '61',
      action: 'updated',
      occurredAt: null,
    });
    const client = new Client({
      connection: temporal.client.connection,
      dataConverter: { payloadCodecs: [codec] },
    });
    // A destination of its own: the file above is auto-shop's, and one connection writes each.
    const destination = `sqlite:${join(dir, 'left-mirror.db')}`;
    await withWorker(async () => {
      // One batch per run: the run that applied the change continues as new before its
      // forwarding is done.
      await client.workflow.signalWithStart(webhookDrainWorkflow, {
        taskQueue: env.TEMPORAL_TASK_QUEUE!,
        workflowId: drainWorkflowId(connectionId),
        args: [{ connectionId, destination, batchesPerRun: 1, checkEveryMs: 60_000 }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination }],
      });
      await eventually(() => hook.calls.length >= 1, 60_000, 'a first call, refused');
      hook.answer = 200;
      await eventually(
        async () =>
          hook.calls.length >= 2 &&
          (await inbox.leftoverChanges(connectionId, new Date(Date.now() + 60_000), 10)).length ===
            0,
        60_000,
        'the change taken by the endpoint and gone from the store',
      );
    });
    const activities: string[] = [];
    for await (const run of client.workflow.list({
      query: `WorkflowId = '${drainWorkflowId(connectionId)}'`,
    })) {
      const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
        if (name) activities.push(name);
      }
    }
    expect(activities).toContain('forwardLeftovers');
    // Every call carried the change's one id, and the record as written.
    expect(new Set(hook.calls.map((c) => c.id)).size).toBe(1);
    expect(JSON.stringify(hook.calls.at(-1)?.body.data.record)).toContain('Left over');
    expect(hook.forged).toBe(0);
    await client.workflow.getHandle(drainWorkflowId(connectionId)).terminate('test over');
    await runCli(['webhooks', 'endpoints', 'remove', 'leftover-hook'], env);
  }, 180_000);

  it('leaves no record data in any workflow history of the webhook path', async () => {
    // Every workflow the tests above ran on this task queue: the drain's runs above all.
    const client = temporal.client;
    const histories = [];
    for await (const execution of client.workflow.list({
      query: `TaskQueue = '${env.TEMPORAL_TASK_QUEUE!}'`,
    })) {
      histories.push(
        await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory(),
      );
    }
    const ids = histories.map((h) => h.events?.[0]?.workflowExecutionStartedEventAttributes);
    expect(ids.map((a) => a?.workflowType?.name)).toContain('webhookDrainWorkflow');
    const text = (await Promise.all(histories.map((h) => historyText(h, codec)))).join('\n');
    // The drain forwarded changes (the endpoints above got records): by key, not by value.
    expect(text).toContain('forwardChanges');
    const file = destinationFile;
    const values = ['email', 'first_name', 'last_name', 'phone'].flatMap((column) =>
      [21, 31, 32, 51, 52, 53, 54, 55, 56].flatMap((id) => {
        const value = destinationColumn(file, 'leads', column).get(String(id));
        return typeof value === 'string' && value.length >= 4 ? [value] : [];
      }),
    );
    expect(values.length).toBeGreaterThanOrEqual(3);
    expect(values.filter((value) => text.includes(value))).toEqual([]);
  });

  it('refuses a bad endpoint in one line', async () => {
    const bad = await runCli(['webhooks', 'endpoints', 'add', 'x', 'ftp://example.com'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "ebsync: url 'ftp://example.com' is not allowed: expected an http(s) URL\n",
    );
    const badType = await runCli(
      ['webhooks', 'endpoints', 'add', 'x', 'https://example.com', '--types', 'expenses'],
      env,
    );
    expect(badType.code).toBe(2);
    expect(badType.stderr).toMatch(/^ebsync: --types='expenses' is not allowed: expected .*leads/);
  });
});
