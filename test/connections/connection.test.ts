import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { createLead } from '../../sandbox/resources/leads.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import {
  connectionWorkflowId,
  type ConnectionInput,
  type ConnectionStatus,
  type Credentials,
  getCredentialsUpdate,
  reconnectUpdate,
  setPausedUpdate,
  statusQuery,
} from '../../workflows/connection-types.js';
import { probeAsSyncWorkflow, probeConnectionWorkflow } from '../fixtures/workflows.js';
import { payloadBytes } from '../helpers/history.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';
import { withRefreshRetry } from '../../cli/refresh-retry.js';

/**
 * Durable connections on a real dev server against the sandbox over HTTPS, with workers in
 * their own processes (as in production), so that "exactly one refresh" holds across processes.
 */
const key = randomBytes(32);
const KEYS = `k1:${key.toString('base64')}`;
const dataConverter = { payloadCodecs: [new EncryptionCodec([{ id: 'k1', key }])] };
const LEAD_EMAIL = 'zoë.sealed@example.com';

let dir: string;
let bundlePath: string;
let client: Client;
let connection: Connection;
const workers = new Set<ChildProcess>();
const workflowIds: string[] = [];

interface Env {
  sb: Sandbox;
  taskQueue: string;
  appId: number;
  clientId: string;
}

async function makeSandbox(ttlSeconds: number): Promise<Env> {
  const sb = await startSandbox({ accessTokenTtlSeconds: ttlSeconds, certDir: join(dir, 'cert') });
  createLead(sb.ctx, sb.businessId, { email: LEAD_EMAIL, first_name: 'Zoë' }, {});
  const app = sb.admin.createApp({
    name: 'ebsync test',
    redirectUris: ['http://127.0.0.1/callback'],
    permissions: ['lead_read', 'lead_write'],
  });
  return {
    sb,
    taskQueue: `conn-${randomBytes(4).toString('hex')}`,
    appId: app.id,
    clientId: app.client_id,
  };
}

function startWorker(e: Env, extra: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/connection-worker.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: e.taskQueue,
      BUNDLE: bundlePath,
      BASE_URL: e.sb.baseUrl,
      CA_FILE: e.sb.caFile ?? '',
      KEYS,
      PAUSED_RETRY_MS: '400',
      JOURNAL: join(dir, `journal-${e.taskQueue}.db`),
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  workers.add(child);
  child.once('exit', () => workers.delete(child));
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('worker ready')) resolve(child);
    });
    child.once('exit', (code) =>
      reject(new Error(`worker exited ${code} before ready: ${err.slice(-2000)}`)),
    );
  });
}

async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Fresh OAuth credentials of a new install of the test app. */
function installCredentials(e: Env): { credentials: Credentials; permissions: string[] } {
  const tokens = e.sb.admin.install({ appId: e.appId });
  const now = Date.now();
  return {
    permissions: tokens.scope.split(' '),
    credentials: {
      kind: 'oauth',
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      accessIssuedAt: now,
      accessExpiresAt: now + tokens.expires_in * 1000,
    },
  };
}

async function connect(
  e: Env,
  connectionId: string,
  options: { historyLimit?: number; apiKey?: string; authUrl?: string } = {},
): Promise<void> {
  const app = installCredentials(e);
  const input: ConnectionInput = {
    profile: {
      connectionId,
      kind: options.apiKey ? 'integration_key' : 'installed_app',
      baseUrl: e.sb.baseUrl,
      ...(options.apiKey ? {} : { authUrl: options.authUrl ?? e.sb.authUrl, clientId: e.clientId }),
      permissions: options.apiKey ? [] : app.permissions,
    },
    credentials: options.apiKey ? { kind: 'apiKey', apiKey: options.apiKey } : app.credentials,
    ...(options.historyLimit !== undefined ? { historyLimit: options.historyLimit } : {}),
  };
  workflowIds.push(connectionWorkflowId(connectionId));
  await client.workflow.start(connectionWorkflow, {
    taskQueue: e.taskQueue,
    workflowId: connectionWorkflowId(connectionId),
    args: [input],
  });
}

function startProbe(e: Env, connectionId: string, calls: number) {
  const workflowId = `probe-${connectionId}-${randomBytes(4).toString('hex')}`;
  workflowIds.push(workflowId);
  return client.workflow.start(probeConnectionWorkflow, {
    taskQueue: e.taskQueue,
    workflowId,
    args: [connectionId, calls],
    workflowExecutionTimeout: '90 seconds',
  });
}

async function probe(e: Env, connectionId: string, calls: number): Promise<string[]> {
  return (await startProbe(e, connectionId, calls)).result();
}

const connectionHandle = (connectionId: string) =>
  client.workflow.getHandle<typeof connectionWorkflow>(connectionWorkflowId(connectionId));
const status = (connectionId: string) => connectionHandle(connectionId).query(statusQuery);

const requestsTo = (sb: Sandbox, route: string): Record<string, number> =>
  sb.ctx.counters.snapshot().requests[route] ?? {};
const totalRequests = (sb: Sandbox): number =>
  Object.values(sb.ctx.counters.snapshot().requests)
    .flatMap((byStatus) => Object.values(byStatus))
    .reduce((a, b) => a + b, 0);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-conn-'));
  const { code } = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('../fixtures/workflows.ts', import.meta.url)),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  bundlePath = join(dir, 'bundle.js');
  await writeFile(bundlePath, code);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection, dataConverter });
});

afterAll(async () => {
  await Promise.all([...workers].map(stopWorker));
  await connection?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('connection workflow: one token owner per connection', () => {
  it('200 concurrent activities on two worker processes, token expired: exactly one refresh, no reuse, all succeed', async () => {
    const e = await makeSandbox(3600);
    try {
      const w1 = await startWorker(e);
      const w2 = await startWorker(e);
      await connect(e, 'two-workers');
      expect(await probe(e, 'two-workers', 20)).toContain(LEAD_EMAIL);
      // Every cached access token is now dead at the service, though not by its own clock.
      e.sb.ctx.clock.advance(3_700_000);
      e.sb.ctx.counters.reset();
      const results = await probe(e, 'two-workers', 200);
      expect(results).toHaveLength(200);
      expect(new Set(results)).toEqual(new Set([LEAD_EMAIL]));
      const counters = e.sb.ctx.counters.snapshot();
      expect(counters.token_refreshes).toBe(1);
      expect(counters.refresh_token_reuse).toBe(0);
      expect(counters.grants_revoked).toBe(0);
      expect((await status('two-workers')).refreshCount).toBe(1);
      await Promise.all([stopWorker(w1), stopWorker(w2)]);
    } finally {
      await e.sb.close();
    }
  });

  it('a revoked grant: needs_reauth after at most two requests, then no requests until reconnect', async () => {
    const e = await makeSandbox(3600);
    try {
      const w = await startWorker(e);
      await connect(e, 'revoked');
      expect(await probe(e, 'revoked', 3)).toEqual([LEAD_EMAIL, LEAD_EMAIL, LEAD_EMAIL]);
      for (const grant of e.sb.admin.grants({ appId: e.appId })) e.sb.admin.disconnect(grant.id);
      e.sb.ctx.counters.reset();

      await expect(probe(e, 'revoked', 1)).rejects.toBeInstanceOf(WorkflowFailedError);
      expect(totalRequests(e.sb)).toBeLessThanOrEqual(2);
      const after = await status('revoked');
      expect(after.state).toBe('needs_reauth');
      expect(after.lastError).toMatch(/invalid_grant|disconnect|revoked/i);

      const before = totalRequests(e.sb);
      await expect(probe(e, 'revoked', 5)).rejects.toBeInstanceOf(WorkflowFailedError);
      expect(totalRequests(e.sb)).toBe(before);

      // Reconnect with a fresh install: the same workflow takes the new tokens and syncs resume.
      expect((await status('revoked')).reconnectedAt).toBeUndefined();
      const reconnecting = Date.now();
      const reconnected = await connectionHandle('revoked').executeUpdate(reconnectUpdate, {
        args: [{ credentials: installCredentials(e).credentials }],
      });
      // When, for the status: a pass that failed before it is not the connection's failure now.
      expect(reconnected.reconnectedAt).toBeGreaterThanOrEqual(reconnecting - 1_000);
      expect(reconnected.reconnectedAt).toBeGreaterThan(reconnected.connectedAt);
      // The worker's cached "not active" verdict lasts 15 s at most; a new worker has none.
      await stopWorker(w);
      const w2 = await startWorker(e);
      expect(await probe(e, 'revoked', 2)).toEqual([LEAD_EMAIL, LEAD_EMAIL]);
      expect((await status('revoked')).state).toBe('active');
      await stopWorker(w2);
    } finally {
      await e.sb.close();
    }
  });

  it('reconnected after a revoked grant: the same worker runs many activities at once with the new grant a second later', async () => {
    const e = await makeSandbox(3600);
    try {
      const w = await startWorker(e);
      await connect(e, 'revoked-busy');
      expect(await probe(e, 'revoked-busy', 3)).toEqual([LEAD_EMAIL, LEAD_EMAIL, LEAD_EMAIL]);
      for (const grant of e.sb.admin.grants({ appId: e.appId })) e.sb.admin.disconnect(grant.id);
      // The worker learns "needs_reauth" from a sync's own refusal, and keeps that verdict.
      await expect(probe(e, 'revoked-busy', 1)).rejects.toBeInstanceOf(WorkflowFailedError);
      expect((await status('revoked-busy')).state).toBe('needs_reauth');

      await connectionHandle('revoked-busy').executeUpdate(reconnectUpdate, {
        args: [{ credentials: installCredentials(e).credentials }],
      });
      // docs/connections.md: workers see a reconnect within a second. Every one of a sync's
      // activities that start together must, not only the first to ask.
      await new Promise((r) => setTimeout(r, 1_100));
      expect(await probe(e, 'revoked-busy', 12)).toEqual(Array(12).fill(LEAD_EMAIL));
      expect((await status('revoked-busy')).state).toBe('active');
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  });

  it('survives a worker killed during a refresh without losing the rotated refresh token', async () => {
    const e = await makeSandbox(3600);
    try {
      const crashing = await startWorker(e, { CRASH_AFTER_ROTATION: '1' });
      await connect(e, 'crash');
      expect(await probe(e, 'crash', 1)).toEqual([LEAD_EMAIL]);
      e.sb.ctx.clock.advance(3_700_000);
      e.sb.ctx.counters.reset();
      const died = new Promise<NodeJS.Signals | null>((r) =>
        crashing.once('exit', (_code, signal) => r(signal)),
      );
      const run = probe(e, 'crash', 1);
      expect(await died).toBe('SIGKILL');
      // The refresh happened at the service, and its answer died with the worker.
      expect(e.sb.ctx.counters.snapshot().token_refreshes).toBe(1);
      const healthy = await startWorker(e);
      expect(await run).toEqual([LEAD_EMAIL]);
      const counters = e.sb.ctx.counters.snapshot();
      expect(counters.token_refreshes).toBe(1);
      expect(counters.refresh_token_reuse).toBe(0);
      expect(counters.grants_revoked).toBe(0);
      const s = await status('crash');
      expect(s.state).toBe('active');
      expect(s.refreshCount).toBe(1);
      await stopWorker(healthy);
    } finally {
      await e.sb.close();
    }
  }, 120_000);

  it('refreshes a short-lived token ahead of expiry: no 401 reaches a sync', async () => {
    // The timing itself is checked in test/workflows/connection.test.ts from the timers the
    // workflow starts; here a few real rotations against the sandbox.
    const e = await makeSandbox(4);
    try {
      const w = await startWorker(e);
      await connect(e, 'short-lived');
      // Syncs run for at least 6 s, and on (within a bound) until two tokens have been
      // rotated: on a loaded machine 6 s of wall time may see only one.
      const started = Date.now();
      const refreshes = () => e.sb.ctx.counters.snapshot().token_refreshes;
      let calls = 0;
      while (Date.now() - started < 90_000 && (Date.now() - started < 6_000 || refreshes() < 2)) {
        expect(await probe(e, 'short-lived', 3)).toEqual([LEAD_EMAIL, LEAD_EMAIL, LEAD_EMAIL]);
        calls += 3;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(calls).toBeGreaterThan(6);
      expect(requestsTo(e.sb, 'leads.list')['401'] ?? 0).toBe(0);
      expect(e.sb.ctx.counters.snapshot().token_refreshes).toBeGreaterThanOrEqual(2);
      expect(e.sb.ctx.counters.snapshot().refresh_token_reuse).toBe(0);
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  }, 150_000);

  it('a refresh that keeps failing is shown retrying, with its attempt and reason, once it is due: not a silent active', async () => {
    // The authorization server away: the refresh activity retries for about 90 s before the
    // workflow itself says "refresh failed", and the listing showed nothing wrong meanwhile.
    const e = await makeSandbox(3);
    try {
      const w = await startWorker(e);
      const away = `https://127.0.0.1:${await closedPort()}/oauth/token`;
      await connect(e, 'auth-away', { authUrl: away });
      let shown: ConnectionStatus | undefined;
      const until = Date.now() + 60_000;
      while (Date.now() < until) {
        shown = await withRefreshRetry(client, await status('auth-away'));
        if (shown.lastError !== null && (shown.accessExpiresAt ?? Infinity) <= Date.now()) break;
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(shown?.state).toBe('active');
      expect(shown?.lastError).toMatch(
        /^refresh failed \d+ times? in a row, retrying: token refresh failed: .+; its access token expired at \d{4}-/,
      );
      // What the workflow itself says has no error yet: the description is what knows.
      expect((await status('auth-away')).lastError).toBeNull();
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  }, 120_000);

  it("a service whose clock runs ahead refuses a token refreshed ahead of expiry: a sync's activity retries with the next token, the connection stays active", async () => {
    // 60 s tokens: refreshed 12 s before they end, while this worker still holds the old one.
    const e = await makeSandbox(60);
    try {
      const w = await startWorker(e);
      await connect(e, 'clock-ahead');
      expect(await probe(e, 'clock-ahead', 1)).toEqual([LEAD_EMAIL]);
      const deadline = Date.now() + 90_000;
      while ((await status('clock-ahead')).refreshCount < 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 500));
      }
      expect((await status('clock-ahead')).refreshCount).toBe(1);
      // The service's clock jumps ahead: the old token and the one just refreshed are both
      // expired there. The worker sends the old one, is refused, is given the refreshed one,
      // is refused again: the connection refreshes once more, and the activity retries.
      e.sb.ctx.clock.advance(70_000);
      const workflowId = `probe-as-sync-${randomBytes(4).toString('hex')}`;
      workflowIds.push(workflowId);
      const seen = await client.workflow.execute(probeAsSyncWorkflow, {
        taskQueue: e.taskQueue,
        workflowId,
        args: ['clock-ahead'],
        workflowExecutionTimeout: '90 seconds',
      });
      expect(seen).toBe(LEAD_EMAIL);
      const after = await status('clock-ahead');
      expect(after.state).toBe('active');
      expect(after.lastError).toBeNull();
      expect(requestsTo(e.sb, 'leads.list')['401'] ?? 0).toBeGreaterThan(0);
      expect(e.sb.ctx.counters.snapshot().refresh_token_reuse).toBe(0);
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  }, 180_000);

  it('paused: syncs wait without a single request, not even a refresh; resumed: they finish', async () => {
    const e = await makeSandbox(3600);
    try {
      // Re-checks a cached token's connection every 200 ms (10 s by default).
      const w = await startWorker(e, { STATE_CHECK_MS: '200' });
      await connect(e, 'pausable');
      expect(await probe(e, 'pausable', 1)).toEqual([LEAD_EMAIL]);
      const paused = await connectionHandle('pausable').executeUpdate(setPausedUpdate, {
        args: [true],
      });
      expect(paused.state).toBe('paused');
      await new Promise((r) => setTimeout(r, 300));
      // Expired at the service meanwhile: resuming must refresh on demand.
      e.sb.ctx.clock.advance(3_700_000);
      e.sb.ctx.counters.reset();
      const waiting = await startProbe(e, 'pausable', 3);
      const deadline = Date.now() + 15_000;
      let attempts = 0;
      while (attempts < 3 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 300));
        const pending = (await waiting.describe()).raw.pendingActivities ?? [];
        attempts = pending.length === 3 ? Math.min(...pending.map((a) => a.attempt ?? 0)) : 0;
      }
      // Several attempts each, every one refused before any request.
      expect(attempts).toBeGreaterThanOrEqual(3);
      expect((await waiting.describe()).status.name).toBe('RUNNING');
      expect(totalRequests(e.sb)).toBe(0);
      expect(e.sb.ctx.counters.snapshot().token_refreshes).toBe(0);

      const resumed = await connectionHandle('pausable').executeUpdate(setPausedUpdate, {
        args: [false],
      });
      expect(resumed.state).toBe('active');
      expect(await waiting.result()).toEqual([LEAD_EMAIL, LEAD_EMAIL, LEAD_EMAIL]);
      expect(e.sb.ctx.counters.snapshot().token_refreshes).toBe(1);
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  }, 90_000);

  it('an integration key refused with 401: needs_reauth after one request, then no requests until reconnect', async () => {
    const e = await makeSandbox(3600);
    try {
      const w = await startWorker(e);
      const first = e.sb.admin.createKey({ name: 'ebsync' });
      await connect(e, 'keyed', { apiKey: first.key });
      expect(await probe(e, 'keyed', 2)).toEqual([LEAD_EMAIL, LEAD_EMAIL]);
      e.sb.admin.revokeKey(first.id);
      e.sb.ctx.counters.reset();

      await expect(probe(e, 'keyed', 1)).rejects.toBeInstanceOf(WorkflowFailedError);
      expect(requestsTo(e.sb, 'leads.list')).toEqual({ '401': 1 });
      const after = await status('keyed');
      expect(after.state).toBe('needs_reauth');
      expect(after.lastError).toMatch(/refused the integration key \(401\)/);
      await expect(probe(e, 'keyed', 3)).rejects.toBeInstanceOf(WorkflowFailedError);
      expect(totalRequests(e.sb)).toBe(1);

      const second = e.sb.admin.createKey({ name: 'ebsync 2' });
      const reconnected = await connectionHandle('keyed').executeUpdate(reconnectUpdate, {
        args: [{ credentials: { kind: 'apiKey', apiKey: second.key } }],
      });
      expect(reconnected.state).toBe('active');
      // This worker keeps its "needs reauth" verdict 15 s; a new one has none.
      await stopWorker(w);
      const w2 = await startWorker(e);
      expect(await probe(e, 'keyed', 2)).toEqual([LEAD_EMAIL, LEAD_EMAIL]);
      await stopWorker(w2);
    } finally {
      await e.sb.close();
    }
  }, 90_000);

  it('continues as new before its history grows long, keeping tokens and state', async () => {
    const e = await makeSandbox(3600);
    try {
      const w = await startWorker(e);
      await connect(e, 'long-lived', { historyLimit: 30 });
      const handle = connectionHandle('long-lived');
      const firstRun = (await handle.describe()).runId;
      const issued = new Set<string>();
      for (let i = 0; i < 25; i++) {
        const credentials = await handle.executeUpdate(getCredentialsUpdate, { args: [{}] });
        if (credentials.kind !== 'oauth')
          throw new Error(`expected OAuth, got ${credentials.kind}`);
        issued.add(credentials.accessToken);
      }
      expect(issued.size).toBe(1);
      const latest = await handle.describe();
      expect(latest.runId).not.toBe(firstRun);
      expect(latest.status.name).toBe('RUNNING');
      expect((await status('long-lived')).state).toBe('active');
      expect(await probe(e, 'long-lived', 2)).toEqual([LEAD_EMAIL, LEAD_EMAIL]);
      expect(e.sb.ctx.counters.snapshot().token_refreshes).toBe(0);
      await stopWorker(w);
    } finally {
      await e.sb.close();
    }
  }, 90_000);

  it('replays every connection history these tests produced', async () => {
    const histories = [];
    for (const workflowId of workflowIds.filter((id) => id.startsWith('connection-'))) {
      for await (const execution of client.workflow.list({
        query: `WorkflowId = '${workflowId}'`,
      })) {
        histories.push({
          workflowId,
          history: await client.workflow.getHandle(workflowId, execution.runId).fetchHistory(),
        });
      }
    }
    // Run alone (-t), the tests before it have produced nothing: that is a failure, not a pass.
    const connections = workflowIds.filter((id) => id.startsWith('connection-'));
    expect(connections.length).toBeGreaterThan(0);
    expect(histories.length).toBeGreaterThanOrEqual(connections.length);
    const results = Worker.runReplayHistories(
      { workflowBundle: { codePath: bundlePath }, dataConverter },
      histories,
    );
    let replayed = 0;
    for await (const result of results) {
      expect(result.error, result.workflowId).toBeUndefined();
      replayed += 1;
    }
    expect(replayed).toBe(histories.length);
  });

  it('keeps tokens and lead emails out of every history in plaintext', async () => {
    expect(workflowIds.length).toBeGreaterThan(5);
    const secrets = [LEAD_EMAIL];
    for (const workflowId of workflowIds) {
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      const bytes = payloadBytes(history);
      expect(bytes.length).toBeGreaterThan(0);
      for (const secret of secrets) expect(bytes.includes(secret)).toBe(false);
      const decoded = await Promise.all(
        [...(history.events ?? [])].map(async (event) => {
          const payloads = event.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
          return dataConverter.payloadCodecs[0]!.decode(payloads);
        }),
      );
      // Decoding with the key does reveal the credentials: the search above could find them.
      const plain = Buffer.concat(
        decoded.flat().map((p) => Buffer.from(p.data ?? new Uint8Array())),
      );
      if (workflowId.startsWith('connection-'))
        expect(plain.toString()).toMatch(/"(accessToken|apiKey)"/);
      for (const token of plain
        .toString()
        .match(/"(?:accessToken|refreshToken|apiKey)":"([^"]+)"/g) ?? []) {
        const value = token.split('":"')[1]!.slice(0, -1);
        expect(bytes.includes(value)).toBe(false);
      }
    }
  });
});
