import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { saveConnection } from '../../cli/connections.js';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { recordHandOff } from '../../worker/record-hand-off.js';
import { connectClient } from '../../worker/temporal-client.js';
import { CliProcess } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { destinationColumn, eventually } from './deliveries.js';

/**
 * More record workflows than a worker has workflow-task slots (100), all waiting when a worker
 * starts with nothing cached. Each read runs inside its record's workflow task and needs the
 * connection's credentials, which only the connection workflow gives, in a workflow task of
 * its own. A read that waited for them inside its task would leave no slot for that answer:
 * the worker stalled for minutes this way. The real `ebsync worker`, its real mirror deps.
 */
const RECORDS = 150;
const CONNECTION = 'slots-shop';
let ts: TestSandbox;
let dir: string;
let env: Record<string, string>;
const workers: CliProcess[] = [];

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: RECORDS + 10, events: 2 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-worker-slots-'));
  env = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('slots'),
    EBSYNC_LOG_FORMAT: 'json',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `worker-slots-${process.pid}`,
    EBS_BASE_URL: ts.sb.baseUrl,
    EBS_CA_FILE: ts.sb.caFile ?? '',
    // Unpaced: the reads are the point here, not the rate.
    EBS_RATE_LIMIT: '0',
  };
});

afterAll(async () => {
  for (const worker of workers) worker.killAll();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function startWorker(): Promise<CliProcess> {
  const worker = new CliProcess(['worker'], env);
  workers.push(worker);
  await worker.waitForLine(/worker started/, 60_000);
  return worker;
}

it('a worker starting cold under more waiting records than it has task slots applies them all', async () => {
  const config = loadConfig({ ...process.env, ...env });
  const { client, close } = await connectClient(config);
  try {
    // Connecting needs a worker; this one stops before any record is handed over.
    const connecting = await startWorker();
    await saveConnection(
      client,
      config,
      {
        connectionId: CONNECTION,
        kind: 'integration_key',
        baseUrl: ts.sb.baseUrl,
        permissions: [],
      },
      { kind: 'apiKey', apiKey: ts.sb.apiKey },
    );
    expect((await connecting.stop('SIGTERM', 60_000)).code).toBe(0);

    const destinationFile = join(dir, 'mirror.db');
    const handOff = recordHandOff(client, {
      taskQueue: config.temporal.taskQueue,
      debounceMs: 100,
    });
    const leads = Array.from({ length: RECORDS }, (_, i) => String(i + 1));
    for (const id of leads) {
      ts.sb.admin.patchRecord('lead', Number(id), { first_name: `Slots ${id}` });
      await handOff(
        {
          connectionId: CONNECTION,
          deliveryId: `evt_slots_${id}`,
          resource: 'leads',
          recordId: id,
          action: 'updated',
          occurredAt: null,
        },
        { secret: 'unused', destination: `sqlite:${destinationFile}` },
      );
    }

    const worker = await startWorker();
    const names = (): Map<string, unknown> =>
      destinationColumn(destinationFile, 'leads', 'first_name');
    const applied = (): number => {
      const now = names();
      return leads.filter((id) => now.get(id) === `Slots ${id}`).length;
    };
    await eventually(() => applied() === RECORDS, 60_000, 'every record applied').catch(
      (error: Error) => {
        throw new Error(
          `${error.message}: ${applied()} of ${RECORDS} within a minute of the worker's start`,
        );
      },
    );
    expect((await worker.stop('SIGTERM', 60_000)).code).toBe(0);
  } finally {
    await close();
  }
}, 240_000);
