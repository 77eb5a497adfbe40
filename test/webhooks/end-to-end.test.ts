import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { webhookRegistrations } from '../../worker/webhook-receiver.js';
import { CliProcess, freePort } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  connectSandbox,
  destinationColumn,
  eventually,
  hintBody,
  inLanes,
  post,
  standardHeaders,
  registerAtSandbox,
} from './deliveries.js';
import {
  expectInboxOf,
  expectInOrder,
  expectStatuses,
  floodName,
  floodPlan,
  inboxRows,
  leadWrites,
  logLeadWrites,
  sendItem,
  type FloodItem,
  type Kind,
} from './flood.js';

/**
 * The whole path with the real commands: `ebsync webhooks register` at the sandbox, `ebsync
 * webhooks serve` and `ebsync worker` as processes of their own, and a staff edit at the
 * sandbox arriving in the destination. Then the receiver is SIGKILLed mid-flood; and the
 * issue's flood goes through them with the receiver SIGKILLed mid-flood and the worker
 * mid-drain: every delivery answered 2xx is applied, once, in each record's order.
 */
const CONNECTION = 'e2e-shop';
let ts: TestSandbox;
let dir: string;
let env: Record<string, string>;
let destinationFile: string;
let store: string;
let serve: CliProcess | undefined;
let worker: CliProcess | undefined;
let receiverBase: string;

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 300, events: 5 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-e2e-'));
  destinationFile = join(dir, 'mirror.db');
  store = `sqlite:${join(dir, 'store.db')}`;
  const port = await freePort();
  receiverBase = `http://127.0.0.1:${port}`;
  env = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('e2e'),
    EBSYNC_LOG_FORMAT: 'json',
    EBSYNC_STORE_URL: store,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `e2e-${process.pid}`,
    EBS_BASE_URL: ts.sb.baseUrl,
    EBS_CA_FILE: ts.sb.caFile ?? '',
    EBSYNC_WEBHOOK_PORT: String(port),
    // Batches of 50, unpaced: the flood's drain keeps going while the worker is killed.
    EBSYNC_WEBHOOK_BATCH: '50',
    EBS_RATE_LIMIT: '0',
  };
});

afterAll(async () => {
  serve?.killAll();
  worker?.killAll();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function startServe(): Promise<CliProcess> {
  const cli = new CliProcess(['webhooks', 'serve'], env);
  await cli.waitForLine(/webhook receiver listening/, 60_000);
  return cli;
}

async function startWorker(): Promise<CliProcess> {
  const cli = new CliProcess(['worker'], env);
  await cli.waitForLine(/worker started/, 60_000);
  return cli;
}

const names = (): Map<string, unknown> => destinationColumn(destinationFile, 'leads', 'first_name');

/** Sends a delivery per lead, 8 at a time; the status each got (0: no answer). */
async function deliver(
  secret: string,
  leads: readonly string[],
  prefix: string,
  after?: (answered: number) => void,
): Promise<Map<string, number>> {
  const answered = new Map<string, number>();
  await inLanes(leads, 8, async (id) => {
    const deliveryId = `${prefix}_${id}`;
    const body = hintBody(deliveryId, 'lead', id);
    try {
      const sent = await post(
        `${receiverBase}/webhooks/${CONNECTION}`,
        body,
        standardHeaders(secret, deliveryId, body),
      );
      answered.set(deliveryId, sent.status);
    } catch {
      answered.set(deliveryId, 0);
    }
    after?.(answered.size);
  });
  return answered;
}

describe('webhooks end to end', () => {
  it('a staff edit at the sandbox reaches the destination row through register, serve and a worker', async () => {
    // register refuses a connection that does not exist: connect it first.
    worker = await startWorker();
    await connectSandbox(loadConfig({ ...process.env, ...env }), ts.sb, CONNECTION);
    const registered = await registerAtSandbox(ts.sb, env, CONNECTION, `sqlite:${destinationFile}`);
    expect(registered.stderr).toBe('');
    expect(registered.code, registered.stderr).toBe(0);
    const endpoint = ts.sb.admin.webhooks()[0]!;
    expect(endpoint.url).toBe(`${receiverBase}/webhooks/${CONNECTION}`);
    // Sealed at rest, and never printed.
    expect(registered.stdout).toMatch(/^registered: deliveries to .*\/webhooks\/e2e-shop/);
    expect(registered.stdout).not.toContain(endpoint.secret);
    const stored = readFileSync(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'));
    expect(stored.includes(Buffer.from(endpoint.secret.slice('whsec_'.length)))).toBe(false);

    serve = await startServe();
    ts.sb.admin.patchRecord('lead', 11, { first_name: 'Edited at the sandbox' });
    ts.sb.admin.patchRecord('lead', 12, { first_name: 'Soon gone' });
    await eventually(
      () => names().get('11') === 'Edited at the sandbox' && names().get('12') === 'Soon gone',
      60_000,
      'the edits in the destination',
    );
    ts.sb.admin.deleteRecord('lead', 12);
    await eventually(() => !names().has('12'), 60_000, 'the deleted lead marked deleted');
    await ts.sb.admin.webhooksIdle();
    const attempts = ts.sb.admin.deliveries({ endpointId: endpoint.id });
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    expect(attempts.every((a) => a.http_status === 200)).toBe(true);
    expect(serve.stdout).not.toContain(endpoint.secret);
    // Every delivery the sandbox made is in the inbox, applied. A batch marks its notices
    // done after it wrote their rows, and a last delivery may still be in a batch: waited for.
    await eventually(
      async () => [...(await inboxRows(store, CONNECTION)).values()].every(Boolean),
      30_000,
      'every notice in the inbox applied',
    );
    const rows = await inboxRows(store, CONNECTION);
    expect([...rows.values()].every(Boolean)).toBe(true);
    expect(rows.size).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it('applies every delivery answered 2xx when the receiver is SIGKILLed mid-flood', async () => {
    const endpoint = ts.sb.admin.webhooks()[0]!;
    // The floods below are the only senders: the sandbox's own deliveries stop.
    ts.sb.admin.deleteWebhook(endpoint.id);
    const leads = Array.from({ length: 200 }, (_, i) => String(i + 40));
    for (const id of leads)
      ts.sb.admin.patchRecord('lead', Number(id), { first_name: `Kill ${id}` });
    serve ??= await startServe();
    const running = serve;
    const answered = await deliver(endpoint.secret, leads, 'evt_kill', (count) => {
      if (count === 60) running.child.kill('SIGKILL');
    });
    const ok = [...answered].filter(([, status]) => status === 200).map(([id]) => id);
    const failed = [...answered].filter(([, status]) => status !== 200).map(([id]) => id);
    // The kill landed mid-flood.
    expect(ok.length).toBeGreaterThanOrEqual(50);
    expect(failed.length).toBeGreaterThan(0);
    const lead = (deliveryId: string) => deliveryId.slice('evt_kill_'.length);
    await eventually(
      () => ok.every((id) => names().get(lead(id)) === `Kill ${lead(id)}`),
      90_000,
      'every lead whose delivery got a 2xx carries its edit',
    );
    const rows = await inboxRows(store, CONNECTION);
    expect(ok.filter((id) => rows.get(id) !== true)).toEqual([]);

    // The sender retries what was not answered 2xx, once the receiver is back.
    serve = await startServe();
    const retried = await deliver(endpoint.secret, failed.map(lead), 'evt_kill');
    expect(new Set(retried.values())).toEqual(new Set([200]));
    await eventually(
      () => leads.every((id) => names().get(id) === `Kill ${id}`),
      90_000,
      'every lead carries its edit after the retries',
    );
  }, 360_000);

  it("takes the issue's flood with the receiver SIGKILLed mid-flood and the worker mid-drain: every 2xx applied once, in order", async () => {
    // The sandbox's endpoint went in the test before: the secret from the registration.
    const secret = (await registrationSecret())!;
    await logLeadWrites(`sqlite:${destinationFile}`);
    const targets = Array.from({ length: 100 }, (_, i) => String(i + 150));
    const untouched = Array.from({ length: 50 }, (_, i) => String(i + 250));
    const phases = 4;
    const flood = floodPlan({ total: 10_000, phases, targets, untouched, prefix: 'kill' });
    const url = `${receiverBase}/webhooks/${CONNECTION}`;
    const statuses = new Map<Kind, number[]>();
    let sent = 0;
    let receiverKilled: Promise<void> | undefined;
    let workerKilled: Promise<void> | undefined;
    let pendingAtKill = 0;
    // A sender's retries: no answer or a 5xx is sent again (the receiver may be down) until
    // it is answered; a 2xx or a 4xx is final.
    const send = async (item: FloodItem): Promise<void> => {
      for (let attempt = 0; ; attempt += 1) {
        const status = await sendItem(url, secret, item).then(
          (answer) => answer.status,
          () => 0,
        );
        if (status !== 0 && status < 500) {
          statuses.set(item.kind, [...(statuses.get(item.kind) ?? []), status]);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** attempt)));
      }
      sent += 1;
      if (sent === 3_500) {
        // Mid-flood: the receiver dies under 24 requests in flight, and comes back.
        receiverKilled = (async () => {
          serve!.child.kill('SIGKILL');
          await serve!.exited;
          serve = await startServe();
        })();
      }
      if (sent === 6_500) {
        // Mid-drain: the worker dies with a batch of the drain in its hands, and comes back.
        workerKilled = (async () => {
          const rows = await inboxRows(store, CONNECTION);
          pendingAtKill = [...rows.values()].filter((done) => !done).length;
          worker!.child.kill('SIGKILL');
          await worker!.exited;
          worker = await startWorker();
        })();
      }
    };
    for (const [phase, items] of flood.phases.entries()) {
      for (const id of targets)
        ts.sb.admin.patchRecord('lead', Number(id), { first_name: floodName(id, phase + 1) });
      await inLanes(items, 24, send);
    }
    await inLanes(flood.last, 24, send);
    await receiverKilled;
    await workerKilled;
    expect(receiverKilled).toBeDefined();
    expect(workerKilled).toBeDefined();
    // The drain had notices to go when its worker died.
    expect(pendingAtKill).toBeGreaterThan(0);
    expectStatuses(statuses);
    await eventually(
      () => targets.every((id) => names().get(id) === floodName(id, phases)),
      180_000,
      'every target lead carries its last edit',
    );
    await eventually(
      async () => [...(await inboxRows(store, CONNECTION)).values()].every(Boolean),
      60_000,
      'every notice applied',
    );
    // Only this flood's rows, for the count: the tests before stored their own.
    const rows = await inboxRows(store, CONNECTION);
    for (const id of [...rows.keys()]) if (!id.startsWith('kill_')) rows.delete(id);
    await expectInboxOf(store, CONNECTION, flood, rows);
    const writes = await leadWrites(`sqlite:${destinationFile}`);
    expectInOrder(writes, targets, phases);
    expect(untouched.filter((id) => writes.has(id))).toEqual([]);
  }, 600_000);
});

/** The connection's signing secret, as `webhooks register` stored it (sealed). */
async function registrationSecret(): Promise<string | undefined> {
  const registrations = webhookRegistrations(loadConfig({ ...process.env, ...env }));
  try {
    return (await registrations.get(CONNECTION))?.secret;
  } finally {
    registrations.close();
  }
}
