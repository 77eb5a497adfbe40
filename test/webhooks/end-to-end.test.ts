import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { webhookRegistrations } from '../../worker/webhook-receiver.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  connectSandbox,
  destinationColumn,
  eventually,
  hintBody,
  inLanes,
  post,
  standardHeaders,
} from './deliveries.js';
import { expectInOrder, floodName, inboxRows, leadWrites, logLeadWrites } from './flood.js';

/**
 * The whole path with the real commands: `ebsync webhooks register` at the sandbox, `ebsync
 * webhooks serve` and `ebsync worker` as processes of their own, and a staff edit at the
 * sandbox arriving in the destination. Then the receiver is SIGKILLed mid-flood, and the
 * worker mid-drain: every delivery answered 2xx is applied, once, in each record's order.
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
    // Small batches, so a kill lands between batches and inside one.
    EBSYNC_WEBHOOK_BATCH: '20',
    EBS_RATE_LIMIT: '50',
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
    const registered = await runCli(
      [
        'webhooks',
        'register',
        CONNECTION,
        '--to',
        `sqlite:${destinationFile}`,
        '--sandbox-admin',
        `${ts.sb.url}/admin`,
        '--admin-token',
        ts.sb.adminToken,
      ],
      env,
    );
    expect(registered.stderr).toBe('');
    expect(registered.code).toBe(0);
    const endpoint = ts.sb.admin.webhooks()[0]!;
    expect(endpoint.url).toBe(`${receiverBase}/webhooks/${CONNECTION}`);
    // Sealed at rest, and never printed.
    expect(registered.stdout).toMatch(/^registered: deliveries to .*\/webhooks\/e2e-shop/);
    expect(registered.stdout).not.toContain(endpoint.secret);
    const stored = readFileSync(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'));
    expect(stored.includes(Buffer.from(endpoint.secret.slice('whsec_'.length)))).toBe(false);

    worker = await startWorker();
    await connectSandbox(loadConfig({ ...process.env, ...env }), ts.sb, CONNECTION);
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
    // Every delivery the sandbox made is in the inbox, applied.
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

  it('applies every delivery answered 2xx once and in order when the worker is SIGKILLed mid-drain', async () => {
    // The sandbox's endpoint went in the test before: the secret from the registration.
    const sandboxSecret = (await registrationSecret())!;
    await logLeadWrites(`sqlite:${destinationFile}`);
    const leads = Array.from({ length: 150 }, (_, i) => String(i + 100));
    const rounds = 3;
    const answered = new Map<string, number>();
    let killed = false;
    for (let round = 1; round <= rounds; round += 1) {
      for (const id of leads)
        ts.sb.admin.patchRecord('lead', Number(id), { first_name: floodName(id, round) });
      for (const [id, status] of await deliver(sandboxSecret, leads, `evt_drain${round}`))
        answered.set(id, status);
      if (!killed) {
        // Mid-drain: some of the first round applied, not all.
        await eventually(
          () => leads.some((id) => names().get(id) === floodName(id, 1)),
          60_000,
          'the drain under way',
        );
        expect(leads.every((id) => names().get(id) === floodName(id, 1))).toBe(false);
        worker!.child.kill('SIGKILL');
        await worker!.exited;
        killed = true;
        worker = await startWorker();
      }
    }
    expect(new Set(answered.values())).toEqual(new Set([200]));
    await eventually(
      () => leads.every((id) => names().get(id) === floodName(id, rounds)),
      120_000,
      'every lead carries its last edit',
    );
    await eventually(
      async () => [...(await inboxRows(store, CONNECTION)).values()].every(Boolean),
      60_000,
      'every notice applied',
    );
    const rows = await inboxRows(store, CONNECTION);
    expect([...answered.keys()].filter((id) => rows.get(id) !== true)).toEqual([]);
    expectInOrder(await leadWrites(`sqlite:${destinationFile}`), leads, rounds);
  }, 360_000);
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
