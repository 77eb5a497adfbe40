import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { connectClient } from '../../worker/temporal-client.js';
import { webhookRegistrations } from '../../worker/webhook-receiver.js';
import { drainWorkflowId } from '../../workflows/drain-types.js';
import { CliProcess, freePort } from '../helpers/cli.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectSandbox, eventually, inLanes, newSecret } from './deliveries.js';
import {
  expectInboxOf,
  expectInOrder,
  expectStatuses,
  floodLeads,
  floodName,
  floodPlan,
  leadWrites,
  logLeadWrites,
  sendItem,
  type FloodItem,
  type Kind,
} from './flood.js';

/**
 * Several machines: two `ebsync webhooks serve` processes (as behind a load balancer, each
 * with its own data dir) and two `ebsync worker` processes, all on one Postgres store and
 * writing one Postgres destination. The flood goes to both receivers, a repeat often
 * to the other one than its first copy: none is lost, none stored or applied twice.
 */
const CONNECTION = 'shared-shop';
const SECRET = newSecret();
const PHASES = 4;
let ts: TestSandbox;
let dir: string;
const processes: CliProcess[] = [];

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 400, events: 2 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-shared-'));
}, 120_000);

afterAll(async () => {
  for (const p of processes) p.killAll();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function started(args: string[], env: Record<string, string>, line: RegExp) {
  const cli = new CliProcess(args, env);
  processes.push(cli);
  await cli.waitForLine(line, 60_000);
  return cli;
}

it('two receivers and two workers on the Postgres store take the flood: none lost, none applied twice', async () => {
  const [store, destination] = await Promise.all([
    createTestDatabase('shared_inbox'),
    createTestDatabase('shared_hooks_mirror'),
  ]);
  await logLeadWrites(destination);
  const base = {
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('shared'),
    EBSYNC_LOG_FORMAT: 'json',
    EBSYNC_STORE_URL: store,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `shared-hooks-${process.pid}`,
    EBS_BASE_URL: ts.sb.baseUrl,
    EBS_CA_FILE: ts.sb.caFile ?? '',
    EBS_RATE_LIMIT: '0',
    EBSYNC_WEBHOOK_BATCH: '50',
    // Short drain sessions: the flood is taken by many activities, so both workers get some.
    EBSYNC_WEBHOOK_SESSION: '1s',
  };
  const envOf = (name: string, extra: Record<string, string> = {}) => ({
    ...base,
    EBSYNC_DATA_DIR: join(dir, name),
    ...extra,
  });

  // Each receiver reads the registration from its own machine's data dir.
  const receivers: string[] = [];
  for (const name of ['receiver-a', 'receiver-b']) {
    const port = await freePort();
    const env = envOf(name, { EBSYNC_WEBHOOK_PORT: String(port) });
    const registrations = webhookRegistrations(loadConfig({ ...process.env, ...env }));
    await registrations.put(CONNECTION, {
      secret: SECRET,
      destination,
      url: `http://127.0.0.1:${port}/webhooks/${CONNECTION}`,
      endpointId: null,
      registeredAt: new Date().toISOString(),
    });
    registrations.close();
    await started(['webhooks', 'serve'], env, /webhook receiver listening/);
    receivers.push(`http://127.0.0.1:${port}/webhooks/${CONNECTION}`);
  }
  for (const name of ['worker-a', 'worker-b']) {
    await started(['worker'], envOf(name), /worker started/);
  }
  const config = loadConfig({ ...process.env, ...envOf('worker-a') });
  await connectSandbox(config, ts.sb, CONNECTION);

  const { targets, untouched } = floodLeads(ts.sb);
  const flood = floodPlan({ total: 10_000, phases: PHASES, targets, untouched, prefix: 'sh' });
  const statuses = new Map<Kind, number[]>();
  let sent = 0;
  const send = async (item: FloodItem): Promise<void> => {
    // Round robin over the receivers, as a load balancer would.
    const url = receivers[sent++ % receivers.length]!;
    const answer = await sendItem(url, SECRET, item);
    statuses.set(item.kind, [...(statuses.get(item.kind) ?? []), answer.status]);
  };
  for (const [phase, items] of flood.phases.entries()) {
    for (const id of targets)
      ts.sb.admin.patchRecord('lead', Number(id), { first_name: floodName(id, phase + 1) });
    await inLanes(items, 24, send);
  }
  await inLanes(flood.last, 24, send);
  expectStatuses(statuses);

  await eventually(
    async () => {
      const rows = await queryDatabase<{ id: string; first_name: string }>(
        destination,
        'SELECT id, first_name FROM leads',
      );
      const names = new Map(rows.map((r) => [String(r.id), r.first_name]));
      return targets.every((id) => names.get(id) === floodName(id, PHASES));
    },
    180_000,
    'every target lead carries its last edit in the Postgres destination',
  );
  await eventually(
    async () =>
      (
        await queryDatabase<{ n: number }>(
          store,
          'SELECT count(*)::int AS n FROM webhook_inbox WHERE done_at IS NULL',
        )
      )[0]?.n === 0,
    60_000,
    'the inbox drained',
  );
  await expectInboxOf(store, CONNECTION, flood);
  const writes = await leadWrites(destination);
  expectInOrder(writes, targets, PHASES);
  expect(untouched.filter((id) => writes.has(id))).toEqual([]);
  // Both workers took batches: the drain is one workflow, its activities go to either.
  const { client: reader, close: closeReader } = await connectClient(config);
  const takers = new Set<string>();
  try {
    for await (const run of reader.workflow.list({
      query: `WorkflowId = '${drainWorkflowId(CONNECTION)}'`,
    })) {
      const history = await reader.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const identity = event.activityTaskStartedEventAttributes?.identity;
        if (identity) takers.add(identity);
      }
    }
  } finally {
    await closeReader();
  }
  expect(takers.size).toBe(2);
  for (const p of processes) expect((await p.stop('SIGTERM', 60_000)).code).toBe(0);
}, 600_000);
