import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { tcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { connectSandbox, destinationColumn, eventually, registerAtSandbox } from './deliveries.js';

/**
 * The shared Postgres store goes away (a relay in front of it refuses every connection) while
 * staff edit leads at the sandbox. The sandbox gives up on a delivery after 5 attempts in
 * about 8 s, so a receiver that answered 503 until the store came back lost those changes.
 * It now keeps them in its spool and answers 2xx at once; when the store is back it forwards
 * them and the drains apply them.
 */
// Unique among the test files: a drain's workflow id is its connection's, on a shared Temporal.
const CONNECTION = 'store-away-shop';
let ts: TestSandbox;
let dir: string;
let relay: TcpRelay;
const processes: CliProcess[] = [];

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 60, events: 1 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-outage-'));
}, 120_000);

afterAll(async () => {
  for (const p of processes) p.killAll();
  await relay?.stop();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function started(args: string[], env: Record<string, string>, line: RegExp) {
  const cli = new CliProcess(args, env);
  processes.push(cli);
  await cli.waitForLine(line, 60_000);
  return cli;
}

it('a store outage longer than the sender retries loses no delivery: spooled, answered 2xx, applied once the store is back', async () => {
  const database = new URL(await createTestDatabase('ebsync_outage'));
  relay = await tcpRelay(`${database.hostname}:${database.port}`);
  const store = new URL(database);
  store.port = String(relay.port);
  const destinationFile = join(dir, 'mirror.db');
  const port = await freePort();
  const env = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('outage'),
    EBSYNC_LOG_FORMAT: 'json',
    EBSYNC_STORE_URL: store.toString(),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `outage-${process.pid}`,
    EBS_BASE_URL: ts.sb.baseUrl,
    EBS_CA_FILE: ts.sb.caFile ?? '',
    EBSYNC_WEBHOOK_PORT: String(port),
    EBS_RATE_LIMIT: '0',
  };
  await started(['worker'], env, /worker started/);
  await connectSandbox(loadConfig({ ...process.env, ...env }), ts.sb, CONNECTION);
  const registered = await registerAtSandbox(ts.sb, env, CONNECTION, `sqlite:${destinationFile}`);
  expect(registered.code, registered.stderr).toBe(0);
  const serve = await started(['webhooks', 'serve'], env, /webhook receiver listening/);
  const endpoint = ts.sb.admin.webhooks()[0]!;
  const names = () => destinationColumn(destinationFile, 'leads', 'first_name');

  ts.sb.admin.patchRecord('lead', 1, { first_name: 'Before the outage' });
  await eventually(() => names().get('1') === 'Before the outage', 60_000, 'the first edit');
  await ts.sb.admin.webhooksIdle();
  const before = ts.sb.admin.deliveries({ endpointId: endpoint.id }).length;

  relay.refuse();
  const edited = Array.from({ length: 10 }, (_, i) => String(i + 2));
  for (const id of edited)
    ts.sb.admin.patchRecord('lead', Number(id), { first_name: `Away ${id}` });
  await ts.sb.admin.webhooksIdle();
  const during = ts.sb.admin.deliveries({ endpointId: endpoint.id }).slice(before);
  // Every delivery answered 2xx at its first attempt: none left to the sender's retries.
  expect(during.length).toBeGreaterThanOrEqual(edited.length);
  expect(during.map((a) => a.http_status)).toEqual(during.map(() => 200));
  await eventually(
    () => `${serve.stdout}${serve.stderr}`.includes('keeping them in the receiver spool'),
    10_000,
    'the receiver says it keeps notices in its spool',
  );
  // `ebsync status` says what the spool holds, beside the inbox it cannot read.
  const status = await runCli(['status', '--json'], env);
  const problems = (JSON.parse(status.stdout) as { problems: { kind: string; message: string }[] })
    .problems;
  expect(problems.find((p) => p.kind === 'webhook_receiver_spooling')?.message).toMatch(
    /^webhook receiver: \d+ notices kept in its spool for 0 min, as the store cannot take them;/,
  );
  expect(problems.map((p) => p.kind)).toContain('webhook_inbox_unreadable');
  // Longer than the sandbox's 5 attempts take: a 503 would have been given up on by now.
  await new Promise((resolve) => setTimeout(resolve, 9_000));
  expect(edited.filter((id) => names().get(id) === `Away ${id}`)).toEqual([]);

  relay.accept();
  await eventually(
    () => edited.every((id) => names().get(id) === `Away ${id}`),
    90_000,
    'every edit made while the store was away in the destination',
  );
  await eventually(
    () => `${serve.stdout}${serve.stderr}`.includes('the store takes webhook notices again'),
    10_000,
    'the receiver says the spooled notices are in the inbox',
  );
  const after = await runCli(['status', '--json'], env);
  expect(after.stdout).not.toContain('webhook_receiver_spooling');
}, 300_000);
