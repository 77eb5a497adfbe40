import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectSandbox, destinationColumn, eventually, registerAtSandbox } from './deliveries.js';

/**
 * A worker SIGKILLed while its `forwardChanges` activity waits on an automation endpoint: the
 * change reaches the endpoint from a second worker in about the activity's heartbeat timeout.
 * With no heartbeat, Temporal found the dead attempt out only at its start-to-close timeout,
 * two minutes after it began, and the change waited all that time.
 */
const CONNECTION = 'forward-kill';
let ts: TestSandbox;
let dir: string;
let env: Record<string, string>;
let hook: Server | undefined;
const workers: CliProcess[] = [];
let serve: CliProcess | undefined;

beforeAll(async () => {
  ts = await startTestSandbox({ https: true, seed: { leads: 30, events: 5 } });
  dir = mkdtempSync(join(tmpdir(), 'ebsync-forward-kill-'));
  const port = await freePort();
  env = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('forward-kill'),
    EBSYNC_LOG_FORMAT: 'json',
    EBSYNC_STORE_URL: `sqlite:${join(dir, 'store.db')}`,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `forward-kill-${process.pid}`,
    EBS_BASE_URL: ts.sb.baseUrl,
    EBS_CA_FILE: ts.sb.caFile ?? '',
    EBSYNC_WEBHOOK_PORT: String(port),
    EBS_RATE_LIMIT: '0',
  };
}, 120_000);

afterAll(async () => {
  serve?.killAll();
  for (const worker of workers) worker.killAll();
  hook?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function startWorker(): Promise<CliProcess> {
  const cli = new CliProcess(['worker'], env);
  workers.push(cli);
  await cli.waitForLine(/worker started/, 60_000);
  return cli;
}

it('a worker SIGKILLed mid-forward: the change reaches the endpoint from another worker well inside the 2-minute start-to-close timeout', async () => {
  const first = await startWorker();
  await connectSandbox(loadConfig({ ...process.env, ...env }), ts.sb, CONNECTION);
  const destination = join(dir, 'mirror.db');
  const registered = await registerAtSandbox(ts.sb, env, CONNECTION, `sqlite:${destination}`);
  expect(registered.code, registered.stderr).toBe(0);
  serve = new CliProcess(['webhooks', 'serve'], env);
  await serve.waitForLine(/webhook receiver listening/, 60_000);

  // The endpoint: the first request is left unanswered and the worker sending it killed;
  // the ones after are answered 200.
  let killedAt = 0;
  let second: ((at: number) => void) | undefined;
  const delivered = new Promise<number>((resolve) => (second = resolve));
  const requests: string[] = [];
  let killed: Promise<unknown> | undefined;
  hook = createServer((request: IncomingMessage, response) => {
    requests.push(String(request.headers['webhook-id']));
    request.resume();
    if (requests.length === 1) {
      killedAt = Date.now();
      first.child.kill('SIGKILL');
      killed = first.exited.then(() => startWorker());
      return;
    }
    response.writeHead(200).end();
    second?.(Date.now());
  });
  await new Promise<void>((resolve) => hook!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  const added = await runCli(['webhooks', 'endpoints', 'add', 'slow-hook', url], env);
  expect(added.code, added.stderr).toBe(0);

  ts.sb.admin.patchRecord('lead', 7, { first_name: 'Forwarded after a kill' });
  await eventually(() => killedAt > 0, 60_000, 'the first forward at the endpoint');
  await killed;
  // Retried on the second worker once the heartbeat timeout (30 s) passed, not after 2 min.
  const at = await Promise.race([
    delivered,
    new Promise<number>((_, reject) =>
      setTimeout(() => reject(new Error('no second forward within 60 s of the kill')), 60_000),
    ),
  ]);
  expect(at - killedAt).toBeLessThan(60_000);
  expect(requests).toHaveLength(2);
  expect(requests[1]).toBe(requests[0]);
  expect(destinationColumn(destination, 'leads', 'first_name').get('7')).toBe(
    'Forwarded after a kill',
  );
  await eventually(
    async () => {
      const log = await runCli(['webhooks', 'deliveries', '--json'], env);
      const rows = JSON.parse(log.stdout) as { endpoint: string; status: string }[];
      return rows.some((row) => row.endpoint === 'slow-hook' && row.status === 'delivered');
    },
    10_000,
    'the delivery logged delivered',
  );
}, 300_000);
