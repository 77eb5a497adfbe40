import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRecordActivities } from '../../activities/mirror/refresh-record.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import {
  destinationColumn,
  recordDeps,
  eventually,
  hintBody,
  inLanes,
  post,
  standardHeaders,
} from './deliveries.js';

/**
 * The whole path with the real command: `ebsync webhooks register` at the sandbox, `ebsync
 * webhooks serve` as its own process, a worker with the same payload keys, and a staff edit
 * at the sandbox arriving in the destination. Then the receiver is SIGKILLed mid-flood.
 */
let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
let env: Record<string, string>;
let destinationFile: string;
let deps: ReturnType<typeof recordDeps>;
let serve: CliProcess | undefined;
let receiverBase: string;
const keyLine = generateKeyLine('e2e');

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 300, events: 5 } });
  temporal = await connectTemporal();
  dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-e2e-'));
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
    EBSYNC_WEBHOOK_DEBOUNCE: '100ms',
  };
  deps = recordDeps(ts, dir);
});

afterAll(async () => {
  serve?.killAll();
  await deps?.close();
  await temporal?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function startServe(): Promise<CliProcess> {
  const cli = new CliProcess(['webhooks', 'serve'], env);
  await cli.waitForLine(/webhook receiver listening/, 60_000);
  return cli;
}

function withWorker<T>(fn: () => Promise<T>): Promise<T> {
  const [id, key] = keyLine.split(':') as [string, string];
  return temporal.withWorker(
    {
      taskQueue: env.TEMPORAL_TASK_QUEUE!,
      activities: createRecordActivities(deps),
      // The receiver seals its signals with EBSYNC_ENCRYPTION_KEYS: the worker opens them.
      dataConverter: {
        payloadCodecs: [new EncryptionCodec([{ id, key: Buffer.from(key, 'base64') }])],
      },
    },
    fn,
  );
}

const names = (): Map<string, unknown> => destinationColumn(destinationFile, 'leads', 'first_name');

describe('webhooks end to end', () => {
  it('a staff edit at the sandbox reaches the destination row through register, serve and a worker', async () => {
    const registered = await runCli(
      [
        'webhooks',
        'register',
        'e2e-shop',
        '--to',
        `sqlite:${destinationFile}`,
        '--sandbox-admin',
        `${ts.sb.url}/admin`,
      ],
      { ...env, EBS_SANDBOX_ADMIN_TOKEN: ts.sb.adminToken },
    );
    expect(registered.stderr).toBe('');
    expect(registered.code).toBe(0);
    const endpoint = ts.sb.admin.webhooks()[0]!;
    expect(endpoint.url).toBe(`${receiverBase}/webhooks/e2e-shop`);
    // Sealed at rest, and never printed.
    expect(registered.stdout).toMatch(/^registered: deliveries to .*\/webhooks\/e2e-shop/);
    expect(registered.stdout).not.toContain(endpoint.secret);
    const stored = readFileSync(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'));
    expect(stored.includes(Buffer.from(endpoint.secret.slice('whsec_'.length)))).toBe(false);

    serve = await startServe();
    await withWorker(async () => {
      ts.sb.admin.patchRecord('lead', 11, { first_name: 'Edited at the sandbox' });
      ts.sb.admin.patchRecord('lead', 12, { first_name: 'Soon gone' });
      await eventually(
        () => names().get('11') === 'Edited at the sandbox' && names().get('12') === 'Soon gone',
        60_000,
        'the edits in the destination',
      );
      ts.sb.admin.deleteRecord('lead', 12);
      await eventually(() => !names().has('12'), 60_000, 'the deleted lead marked deleted');
    });
    await ts.sb.admin.webhooksIdle();
    const attempts = ts.sb.admin.deliveries({ endpointId: endpoint.id });
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    expect(attempts.every((a) => a.http_status === 200)).toBe(true);
    expect(serve.stdout).not.toContain(endpoint.secret);
  }, 180_000);

  it('applies every delivery answered 2xx when the receiver is SIGKILLed mid-flood', async () => {
    const endpoint = ts.sb.admin.webhooks()[0]!;
    // The flood below is the only sender: the sandbox's own deliveries stop.
    ts.sb.admin.deleteWebhook(endpoint.id);
    const leads = Array.from({ length: 200 }, (_, i) => String(i + 40));
    for (const id of leads)
      ts.sb.admin.patchRecord('lead', Number(id), { first_name: `Kill ${id}` });
    serve ??= await startServe();
    const running = serve;
    const url = `${receiverBase}/webhooks/e2e-shop`;
    const answered = new Map<string, number | 'failed'>();
    await withWorker(async () => {
      await inLanes(leads, 8, async (id) => {
        const body = hintBody(`evt_kill_${id}`, 'lead', id);
        try {
          const sent = await post(
            url,
            body,
            standardHeaders(endpoint.secret, `evt_kill_${id}`, body),
          );
          answered.set(id, sent.status);
        } catch {
          answered.set(id, 'failed');
        }
        if (answered.size === 60) running.child.kill('SIGKILL');
      });
      const ok = [...answered].filter(([, status]) => status === 200).map(([id]) => id);
      const failed = [...answered].filter(([, status]) => status !== 200).map(([id]) => id);
      // The kill landed mid-flood.
      expect(ok.length).toBeGreaterThanOrEqual(50);
      expect(failed.length).toBeGreaterThan(0);
      await eventually(
        () => ok.every((id) => names().get(id) === `Kill ${id}`),
        90_000,
        'every lead whose delivery got a 2xx carries its edit',
      );

      // The sender retries what was not answered 2xx, once the receiver is back.
      serve = await startServe();
      for (const id of failed) {
        const body = hintBody(`evt_kill_${id}`, 'lead', id);
        const sent = await post(
          url,
          body,
          standardHeaders(endpoint.secret, `evt_kill_${id}`, body),
        );
        expect(sent.status).toBe(200);
      }
      await eventually(
        () => leads.every((id) => names().get(id) === `Kill ${id}`),
        90_000,
        'every lead carries its edit after the retries',
      );
    });
  }, 360_000);
});
