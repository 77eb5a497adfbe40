import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import type { ReceiverStatsRecorder } from '../../webhooks/receiver-stats.js';
import type { Client } from '@temporalio/client';
import { saveConnection } from '../../cli/connections.js';
import type { Config } from '../../config/index.js';
import type { Sandbox } from '../../sandbox/server.js';
import { connectClient } from '../../worker/temporal-client.js';
import type { PayloadCodec } from '@temporalio/common';
import { createDrainActivities } from '../../activities/mirror/drain-inbox.js';
import { createRecordActivities } from '../../activities/mirror/refresh-record.js';
import type { AutomationStore } from '../../store/automation-endpoints.js';
import { drainWaker } from '../../worker/drain-wake.js';
import { createReceiver, type ConnectionHook, type ServerLimits } from '../../webhooks/receiver.js';
import type { SignatureScheme } from '../../webhooks/signature.js';
import { WakeUps } from '../../webhooks/wake-ups.js';
import type { sandboxMirrorDeps } from '../fixtures/sandbox-mirror-deps.js';
import { testSandboxDeps } from '../fixtures/sandbox-mirror.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { drainWorkflowId } from '../../workflows/drain-types.js';
import { runCli, type CliResult } from '../helpers/cli.js';

/** Signed deliveries as a sender would make them, and what the test reads back. */
export const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export interface Sent {
  status: number;
  body: Record<string, unknown> | undefined;
  headers: Headers;
}

/** A hint body as the sandbox sends it. */
export function hintBody(id: string, recordType: string, recordId: string | number): string {
  return JSON.stringify({
    id,
    type: `${recordType}.updated`,
    occurred_at: new Date().toISOString(),
    business_id: 1,
    data: { record_type: recordType, id: String(recordId), action: 'updated' },
  });
}

/** Standard Webhooks headers for `body`, signed with `secret` at `at`. */
export function standardHeaders(
  secret: string,
  id: string,
  body: string,
  at = new Date(),
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

export async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<Sent> {
  const response = await fetch(url, { method: 'POST', body, headers });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, body: json, headers: response.headers };
}

/** Runs `fn` over `items`, `lanes` at a time. */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) {
        const i = next;
        next += 1;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** A column of the mirror's rows by id (live rows only). */
export function destinationColumn(
  file: string,
  table: string,
  column: string,
): Map<string, unknown> {
  if (!existsSync(file)) return new Map();
  const db = new Database(file, { readonly: true });
  try {
    const exists = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(table);
    if (!exists) return new Map();
    const rows = db
      .prepare(`SELECT id, ${column} AS value FROM ${table} WHERE deleted_at IS NULL`)
      .all() as { id: string; value: unknown }[];
    return new Map(rows.map((r) => [String(r.id), r.value]));
  } finally {
    db.close();
  }
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** What the drains' activities need: the sandbox by its key, the store (ledger, inbox) in `dir`. */
export function recordDeps(
  ts: TestSandbox,
  dir: string,
  store = `sqlite:${join(dir, 'store.db')}`,
): ReturnType<typeof sandboxMirrorDeps> {
  return testSandboxDeps(ts, { ledger: store, reachLimit: 10_000, per: 100 });
}

/**
 * The webhook path's activities as the worker registers them (activities/index.ts): the
 * drain's batch, forwarding to automations, and the hand-over of per-record workflows of the
 * earlier design, whose drains are woken on `taskQueue`.
 */
export function webhookActivities(
  deps: ReturnType<typeof recordDeps>,
  client: Client,
  taskQueue: string,
  automations?: { store: AutomationStore; codec: PayloadCodec },
) {
  return {
    ...createDrainActivities(deps, automations),
    ...createRecordActivities(
      { inbox: () => deps.inbox(), wakeDrain: drainWaker(client, taskQueue) },
      automations?.store,
      automations ? { inbox: () => deps.inbox(), codec: automations.codec } : undefined,
    ),
  };
}

export interface TestReceiver {
  /** `…/webhooks/<connection>`. */
  url(connectionId: string): string;
  close(): Promise<void>;
}

/**
 * `createReceiver` on a free port as worker/webhook-receiver.ts wires it: notices into
 * `deps`' inbox, wake-ups of the drains on `taskQueue`.
 */
export async function startTestReceiver(options: {
  hooks: ReadonlyMap<string, ConnectionHook>;
  deps: ReturnType<typeof recordDeps>;
  client: Client;
  taskQueue: string;
  scheme?: SignatureScheme;
  allowUnsigned?: boolean;
  bodyLimit?: number;
  limits?: ServerLimits;
  stats?: ReceiverStatsRecorder;
}): Promise<TestReceiver> {
  const wakeUps = new WakeUps(
    drainWaker(options.client, options.taskQueue, async (connectionId) =>
      (await options.deps.inbox()).watching(connectionId),
    ),
  );
  const app = createReceiver({
    hookOf: (id) => Promise.resolve(options.hooks.get(id)),
    store: async (notice) => (await options.deps.inbox()).accept(notice),
    stored: (connectionId, hook) => wakeUps.wake(connectionId, hook.destination),
    scheme: options.scheme ?? 'standard',
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    allowUnsigned: options.allowUnsigned ?? false,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.stats ? { stats: options.stats } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: (connectionId) => `http://127.0.0.1:${port}/webhooks/${connectionId}`,
    async close() {
      wakeUps.close();
      await app.close();
    },
  };
}

/** What a webhook test file stands on: an HTTPS sandbox, Temporal, a scratch directory. */
export interface RecordBed {
  ts: TestSandbox;
  temporal: TemporalHarness;
  dir: string;
  deps: ReturnType<typeof recordDeps>;
}

export async function openRecordBed(
  seed: { leads: number; events: number },
  dirPrefix: string,
): Promise<RecordBed> {
  const ts = await startTestSandbox({ https: true, seed });
  const temporal = await connectTemporal();
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  return { ts, temporal, dir, deps: recordDeps(ts, dir) };
}

/**
 * A test receiver on the bed for one connection (a fresh secret, a SQLite destination of its
 * own in the bed's directory), and what a test of its drain reads.
 */
export async function receiverOnBed(bed: RecordBed, connectionId: string) {
  const taskQueue = bed.temporal.taskQueue();
  // A file per connection: a destination has one writer (Ledger.claimDestination).
  const destinationFile = join(bed.dir, `mirror-${connectionId}.db`);
  const destination = `sqlite:${destinationFile}`;
  const secret = newSecret();
  const receiver = await startTestReceiver({
    hooks: new Map([[connectionId, { secret, destination }]]),
    deps: bed.deps,
    client: bed.temporal.client,
    taskQueue,
  });
  return {
    taskQueue,
    destination,
    secret,
    receiver,
    /** The destination's leads by id: their first names. */
    names: (): Map<string, unknown> => destinationColumn(destinationFile, 'leads', 'first_name'),
    drain: bed.temporal.client.workflow.getHandle(drainWorkflowId(connectionId)),
    /** The activities a worker of the bed registers for the webhook path. */
    activities: webhookActivities(bed.deps, bed.temporal.client, taskQueue),
  };
}

/** Closes what openRecordBed opened; a bed that never opened is nothing to close. */
export async function closeRecordBed(bed: RecordBed | undefined): Promise<void> {
  if (!bed) return;
  await bed.deps.close();
  await bed.temporal.close();
  await bed.ts.close();
  rmSync(bed.dir, { recursive: true, force: true });
}

/**
 * Connects the sandbox's business as `connectionId` with its integration key, as `ebsync
 * connect --api-key` does (a worker must be polling the task queue of `config`).
 */
export async function connectSandbox(
  config: Config,
  sb: Sandbox,
  connectionId: string,
): Promise<void> {
  const { client, close } = await connectClient(config);
  try {
    await saveConnection(
      client,
      config,
      { connectionId, kind: 'integration_key', baseUrl: sb.baseUrl, permissions: [] },
      { kind: 'apiKey', apiKey: sb.apiKey },
    );
  } finally {
    await close();
  }
}

/**
 * `ebsync webhooks register <connection> --to <to> --sandbox-admin`, as a user runs it: the
 * receiver in `env` registered at the sandbox, with its admin token.
 */
export function registerAtSandbox(
  sb: Sandbox,
  env: Record<string, string>,
  connectionId: string,
  to: string,
): Promise<CliResult> {
  return runCli(
    ['webhooks', 'register', connectionId, '--to', to, '--sandbox-admin', `${sb.url}/admin`],
    { ...env, EBS_SANDBOX_ADMIN_TOKEN: sb.adminToken },
  );
}
