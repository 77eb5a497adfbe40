import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDevStatusPage } from '../../cli/dev-stack.js';
import { REQUEST_KEPT } from '../../cli/connection-update.js';
import { ListenRefusal } from '../../cli/network-refusals.js';
import { startStatusServer, type StatusServer } from '../../cli/status-server.js';
import { loadConfig, type Config } from '../../config/index.js';
import type { Logger } from '../../worker/logger.js';
import { connectClient, lazyClient } from '../../worker/temporal-client.js';
import { dataConverter } from '../../worker/data-converter.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import { credentialsRejectedUpdate, statusQuery } from '../../workflows/connection-types.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { fakeConnectionActivities, keyConnectionInput } from '../fixtures/connection-scenarios.js';
import { closedPort } from '../helpers/ports.js';
import { tcpRelay } from '../helpers/tcp-relay.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * The status page's own defences (issue 30, items 6 and 12), against a real Temporal: it
 * answers only to the host names it is reached by (DNS rebinding), sends CSP, frame and
 * nosniff headers, maps errors to accurate statuses in the spec's error shape without raw
 * messages, answers a pause within seconds when no worker polls, and shows no customer
 * e-mail that a CRM's refusal quoted.
 */
const ADMIN_TOKEN = `status-server-admin-${randomBytes(8).toString('hex')}`;
const EMAIL = 'ann.customer@example.com';
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-server-'));

let t: TemporalHarness;
let taskQueue: string;
let config: Config;
let server: StatusServer;
let closeClient: () => Promise<void>;
let client: Client;
let port: number;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with any Host header, or none (fetch would not let a test set it). */
function send(
  path: string,
  options: {
    method?: string;
    host?: string | null;
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: {
          ...(options.host === null ? {} : { host: options.host ?? `127.0.0.1:${port}` }),
          ...options.headers,
        },
        setHost: options.host !== null,
        timeout: 60_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function errorShape(answer: Answer, status: number, reason: string): Record<string, unknown> {
  expect(answer.status, answer.body).toBe(status);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(body).toMatchObject({ meta: { status: 'error' }, reason });
  expect(typeof body.status).toBe('string');
  expect(String(body.message)).not.toContain('\n');
  return body;
}

const mirrorId = `mirror-status-shop-${randomBytes(6).toString('hex')}`;
const connectionId = `status-conn-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  t = await connectTemporal();
  taskQueue = t.taskQueue();
  config = loadConfig({
    EBSYNC_DATA_DIR: dir,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    EBSYNC_ADMIN_TOKEN: ADMIN_TOKEN,
    EBSYNC_STATUS_PORT: '0',
    EBSYNC_STATUS_ALLOWED_HOSTS: 'status.example.com',
    EBSYNC_WEBHOOK_PORT: String(await closedPort()),
  });
  const converter = dataConverter(config);
  const connected = await connectClient(config);
  closeClient = connected.close;
  client = connected.client;
  // A mirror pass that a CRM refused, quoting a customer's e-mail, and a connection: both
  // under a worker, which then stops, so the pause below meets no worker.
  await t.withWorker(
    {
      taskQueue,
      dataConverter: converter,
      activities: {
        ...fakeConnectionActivities,
        planMirrorPass: () =>
          Promise.reject(
            ApplicationFailure.nonRetryable(
              `Salesforce answered 400 to POST /composite/sobjects: DUPLICATE_VALUE: duplicate value found: Email duplicates value on record with Email ${EMAIL}, phone +1 (555) 010-2030`,
            ),
          ),
      },
    },
    async () => {
      const mirror = await client.workflow.start(mirrorWorkflow, {
        taskQueue,
        workflowId: mirrorId,
        args: [
          {
            connectionId: 'status-shop',
            destination: `sqlite:${join(dir, 'mirror.db')}`,
            subjects: ['leads'],
            mode: 'incremental',
          },
        ],
      });
      await expect(mirror.result()).rejects.toThrow();
      await client.workflow.start(connectionWorkflow, {
        taskQueue,
        workflowId: `connection-${connectionId}`,
        args: [
          {
            profile: {
              connectionId,
              kind: 'integration_key',
              baseUrl: 'https://svc.example/api/v1/',
              permissions: [],
            },
            credentials: { kind: 'apiKey', apiKey: 'ik_status_server_test_key' },
          },
        ],
      });
      server = await startStatusServer(config, client);
      port = Number(new URL(server.url).port);
      // The report with the connection is gathered while the worker answers its query.
      for (let i = 0; i < 60; i++) {
        const report = JSON.parse((await send('/status.json')).body) as {
          connections?: { connectionId: string }[];
        };
        if (report.connections?.some((c) => c.connectionId === connectionId)) return;
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error('the connection never showed in the report');
    },
  );
}, 120_000);

afterAll(async () => {
  await server?.close();
  await closeClient?.();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the status page', () => {
  it.each([
    'evil.example',
    'evil.example:4020',
    '127.0.0.1.evil.example',
    'localhost.evil.example',
  ])('refuses Host %j (DNS rebinding) in the error shape', async (host) => {
    for (const path of ['/', '/status.json', '/fragment']) {
      const body = errorShape(await send(path, { host }), 403, 'host_not_allowed');
      expect(String(body.message)).toMatch(/EBSYNC_STATUS_ALLOWED_HOSTS/);
    }
  });

  it('refuses a request with no Host header in the error shape, not with an empty 400', async () => {
    errorShape(await send('/status.json', { host: null }), 400, 'host_missing');
  });

  it.each(['127.0.0.1', 'localhost', '[::1]', 'status.example.com'])(
    'answers Host %j',
    async (name) => {
      expect((await send('/status.json', { host: `${name}:${port}` })).status).toBe(200);
    },
  );

  it('sends a CSP, X-Frame-Options and nosniff with the page and the JSON', async () => {
    for (const path of ['/', '/status.json', '/fragment', '/no-such-page']) {
      const { headers } = await send(path);
      expect(headers['content-security-policy'], path).toMatch(/frame-ancestors 'none'/);
      expect(headers['content-security-policy'], path).toMatch(/script-src 'sha256-[^']+'/);
      expect(headers['content-security-policy'], path).toMatch(/default-src 'none'/);
      expect(headers['x-frame-options'], path).toBe('DENY');
      expect(headers['x-content-type-options'], path).toBe('nosniff');
    }
    // The page's own script is the one the policy allows (no inline handlers besides).
    const page = (await send('/')).body;
    expect(page).not.toMatch(/\son[a-z]+="/);
  });

  it('maps bad requests to their own statuses, without raw messages', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    errorShape(
      await send(`/api/connections/${connectionId}/sync`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/xml' },
        body: '<x/>',
      }),
      415,
      'unsupported_media_type',
    );
    const malformed = errorShape(
      await send(`/api/connections/${connectionId}/sync`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"not json',
      }),
      400,
      'malformed_body',
    );
    expect(String(malformed.message)).not.toMatch(/Unexpected|JSON at position|not json/);
    // JSON's type with nothing in it is no body: the action is read as any other.
    const empty = await send('/api/schedules/sync-no-such-schedule/trigger', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '',
    });
    errorShape(empty, 404, 'schedule_not_found');
    // An id none of ebsync's schedules could have, as the CLI refuses it: malformed, not missing.
    for (const id of ['BadId', 'sync-A', 'x', 'sync-']) {
      const malformed = await send(`/api/schedules/${id}/pause`, { method: 'POST', headers: auth });
      expect(malformed.status, id).toBe(422);
      expect(JSON.parse(malformed.body)).toEqual({
        meta: { status: 'error' },
        errors: { schedule: [expect.stringMatching(/^expected an id of ebsync's schedules: /)] },
      });
    }
    // A text body is no body an action reads: refused before anything starts, on every action.
    for (const path of [
      `/api/connections/${connectionId}/sync`,
      `/api/connections/${connectionId}/pause`,
      `/api/connections/${connectionId}/resume`,
      '/api/schedules/sync-no-such-schedule/trigger',
    ]) {
      const answer = await send(path, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'text/plain' },
        body: 'x',
      });
      expect(answer.status, path).toBe(415);
      errorShape(answer, 415, 'unsupported_media_type');
    }
    // Headers over Node's limit are refused before any route, in the same shape.
    errorShape(
      await send('/status.json', { headers: { 'x-big': 'x'.repeat(20_000) } }),
      431,
      'headers_too_large',
    );
    // Paths the router itself refuses answer in the same shape, not Fastify's own.
    for (const id of ['%ff', 'c'.repeat(3000)]) {
      errorShape(
        await send(`/api/connections/${id}/sync`, { method: 'POST', headers: auth }),
        400,
        'bad_path',
      );
    }
  });

  it('takes the Bearer scheme in any case (RFC 9110), and tells a wrong token from none', async () => {
    const sync = `/api/connections/${connectionId}/sync`;
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      // Past authorization, the schedule is what is missing: the token was taken.
      const right = await send('/api/schedules/sync-no-such-schedule/trigger', {
        method: 'POST',
        headers: { authorization: `${scheme} ${ADMIN_TOKEN}` },
      });
      expect(right.status, right.body).toBe(404);
      errorShape(
        await send(sync, { method: 'POST', headers: { authorization: `${scheme} wrong` } }),
        403,
        'admin_token_invalid',
      );
    }
    errorShape(
      await send(sync, { method: 'POST', headers: { authorization: `Basic ${ADMIN_TOKEN}` } }),
      401,
      'admin_token_missing',
    );
  });

  it('answers a pause within seconds when no worker polls, 503 in the error shape', async () => {
    const started = Date.now();
    const answer = await send(`/api/connections/${connectionId}/pause`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(Date.now() - started).toBeLessThan(30_000);
    const body = errorShape(answer, 503, 'worker_unavailable');
    expect(String(body.message)).toMatch(/worker/);
    expect(String(body.message)).not.toMatch(/DEADLINE|deadline exceeded|grpc/i);
    // "Try again" is true: nothing was sent, so a worker that comes back does not pause it later.
    expect(String(body.message)).toContain('nothing was sent to it');
    const state = await t.withWorker(
      { taskQueue, dataConverter: dataConverter(config), activities: fakeConnectionActivities },
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        // Through the codec the payloads are sealed with, as the page reads them.
        const reader = await connectClient(config);
        try {
          const handle = reader.client.workflow.getHandle(`connection-${connectionId}`);
          return (await handle.query(statusQuery)).state;
        } finally {
          await reader.close();
        }
      },
    );
    expect(state).toBe('active');
  }, 90_000);

  it('accepts with 202, not a refusal, a pause a worker was asked about and then did not carry out in time', async () => {
    // Its own queue and page: the held workflow shares the connection workflow's type.
    const heldQueue = t.taskQueue();
    const heldId = `held-conn-${randomBytes(4).toString('hex')}`;
    const heldConfig = loadConfig({
      EBSYNC_DATA_DIR: dir,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: heldQueue,
      EBSYNC_ADMIN_TOKEN: ADMIN_TOKEN,
      EBSYNC_STATUS_PORT: '0',
      EBSYNC_WEBHOOK_PORT: String(await closedPort()),
    });
    const { code } = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../fixtures/held-update-workflow.ts', import.meta.url)),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    const connected = await connectClient(heldConfig);
    const page = await startStatusServer(heldConfig, connected.client);
    const pagePort = Number(new URL(page.url).port);
    const ask = (path: string, method = 'GET') =>
      fetch(`http://127.0.0.1:${pagePort}${path}`, {
        method,
        headers: method === 'POST' ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {},
      });
    try {
      await t.withWorker(
        {
          taskQueue: heldQueue,
          dataConverter: dataConverter(heldConfig),
          workflowBundle: { code },
          activities: {},
        },
        async () => {
          const handle = await connected.client.workflow.start('connectionWorkflow', {
            taskQueue: heldQueue,
            workflowId: `connection-${heldId}`,
            args: [
              {
                profile: {
                  connectionId: heldId,
                  kind: 'integration_key',
                  baseUrl: 'https://svc.example/api/v1/',
                  permissions: [],
                },
              },
            ],
          });
          try {
            let listed = false;
            for (let i = 0; i < 60 && !listed; i++) {
              const report = (await (await ask('/status.json')).json()) as {
                connections?: { connectionId: string }[];
              };
              listed = report.connections?.some((c) => c.connectionId === heldId) ?? false;
              if (!listed) await new Promise((r) => setTimeout(r, 500));
            }
            expect(listed, 'the held connection shows in the report').toBe(true);
            const answer = await ask(`/api/connections/${heldId}/pause`, 'POST');
            const body = (await answer.json()) as Record<string, unknown>;
            expect(answer.status, JSON.stringify(body)).toBe(202);
            expect(body).toMatchObject({ meta: { status: 'accepted' }, state: 'requested' });
            expect(String(body.message)).toContain(`pause of ${heldId}: no worker carried it out`);
            expect(String(body.message)).toContain(REQUEST_KEPT);
          } finally {
            await handle.terminate('status-server test');
          }
        },
      );
    } finally {
      await page.close();
      await connected.close();
    }
  }, 90_000);

  it('refuses to resume a schedule that would never fire (409), leaving it paused', async () => {
    const id = 'sync-status-never-all-full';
    // As one made before `schedule create` refused such a cron paused: on no task queue that
    // a worker polls, though paused and matching no date it never starts anything.
    const handle = await client.schedule.create({
      scheduleId: id,
      spec: { cronExpressions: ['0 3 31 2 *'], timezone: 'UTC' },
      action: {
        type: 'startWorkflow',
        workflowType: 'nothing',
        taskQueue: `${taskQueue}-never`,
        workflowId: id,
      },
      state: { paused: true },
    });
    try {
      const answer = await send(`/api/schedules/${id}/resume`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const body = errorShape(answer, 409, 'schedule_never_fires');
      expect(body.message).toBe(
        `${id} would never fire: Temporal finds no date its spec matches; not resumed (it stays paused): 'ebsync schedule delete ${id}' removes it`,
      );
      expect((await handle.describe()).state.paused).toBe(true);
    } finally {
      await handle.delete();
    }
  });

  it("shows a CRM's refusal without the customer's e-mail or phone", async () => {
    const report = (await send('/status.json')).body;
    expect(report).toContain('DUPLICATE_VALUE');
    for (const path of ['/status.json', '/fragment', '/']) {
      const text = (await send(path)).body;
      expect(text, path).not.toContain(EMAIL);
      expect(text, path).not.toContain('010-2030');
    }
    expect(report).toContain('[e-mail]');
  });
});

describe('the status page when Temporal is unreachable', () => {
  it('answers 503 temporal_unavailable without the raw gRPC message', async () => {
    const unreachable = loadConfig({
      EBSYNC_DATA_DIR: dir,
      TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      EBSYNC_STATUS_PORT: '0',
    });
    // The product's lazy client: its close waits for calls still retrying. A bare connection
    // closed under them let their retry timers throw 'Channel has been shut down', uncaught, a
    // minute later, in whatever test ran then.
    const lazy = lazyClient(unreachable);
    const lonely = await startStatusServer(unreachable, lazy.client);
    const saved = port;
    port = Number(new URL(lonely.url).port);
    try {
      const body = errorShape(await send('/status.json'), 503, 'temporal_unavailable');
      expect(String(body.message)).toMatch(/Temporal/);
      expect(String(body.message)).not.toMatch(/UNAVAILABLE|ECONNREFUSED|No connection/);
    } finally {
      port = saved;
      await lonely.close();
      await lazy.close();
    }
  }, 120_000);
});

describe('the status page when Temporal goes away after a good report', () => {
  it('answers /status.json 503 with Retry-After, the last report and when and why it is stale', async () => {
    const relay = await tcpRelay(inject('temporalAddress'));
    const relayed = loadConfig({
      EBSYNC_DATA_DIR: dir,
      TEMPORAL_ADDRESS: `127.0.0.1:${relay.port}`,
      TEMPORAL_TASK_QUEUE: taskQueue,
      EBSYNC_STATUS_PORT: '0',
      EBSYNC_WEBHOOK_PORT: String(await closedPort()),
    });
    const connected = await connectClient(relayed);
    const page = await startStatusServer(relayed, connected.client);
    const saved = port;
    port = Number(new URL(page.url).port);
    const poll = async (status: number, withinMs = 60_000): Promise<Answer> => {
      for (const until = Date.now() + withinMs; Date.now() < until;) {
        const answer = await send('/status.json');
        if (answer.status === status) return answer;
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(`/status.json never answered ${status}`);
    };
    try {
      const good = JSON.parse((await poll(200)).body) as Record<string, unknown>;
      expect(good.stale).toBeUndefined();
      await relay.stop();
      // Each Temporal call of a refresh has a deadline of a few seconds, retries included:
      // the client's own retries used to hold the page at 200 for 45 to 60 s.
      const away = Date.now();
      const answer = await poll(503, 20_000);
      expect(Date.now() - away).toBeLessThan(15_000);
      expect(answer.headers['retry-after']).toBe('2');
      expect(answer.headers['cache-control']).toBe('no-store');
      const body = JSON.parse(answer.body) as {
        generatedAt: number;
        connections: unknown[];
        stale: { generatedAt: number; failingSince: number; reason: string; message: string };
      };
      // The last good report, whole, and the reason it is not newer.
      expect(Array.isArray(body.connections)).toBe(true);
      expect(body.stale.generatedAt).toBe(body.generatedAt);
      expect(body.stale.generatedAt).toBeGreaterThanOrEqual(Number(good.generatedAt));
      expect(body.stale.failingSince).toBeGreaterThan(body.generatedAt);
      expect(body.stale.reason).toBe('temporal_unavailable');
      expect(body.stale.message).toMatch(/Temporal at 127\.0\.0\.1:\d+ could not be reached/);
      expect(body.stale.message).not.toMatch(/UNAVAILABLE|ECONNREFUSED|No connection/);
      // The page keeps showing the last report, saying it could not refresh.
      const html = await send('/');
      expect(html.status).toBe(200);
      expect(html.body).toContain('Could not refresh');
      // Temporal back: a current report again, with no stale field.
      await relay.start();
      const back = JSON.parse((await poll(200)).body) as Record<string, unknown>;
      expect(back.stale).toBeUndefined();
    } finally {
      port = saved;
      await page.close();
      await relay.stop();
      await connected.close();
    }
  }, 240_000);
});

describe('the status page on a port in use', () => {
  const takenConfig = (busy: number): Config =>
    loadConfig({
      EBSYNC_DATA_DIR: dir,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      EBSYNC_STATUS_PORT: String(busy),
      EBSYNC_WEBHOOK_PORT: '0',
    });

  it("is refused in one line, as ebsync's other listeners say it, naming the setting", async () => {
    const busy = Number(new URL(server.url).port);
    const { Client, Connection } = await import('@temporalio/client');
    const connection = Connection.lazy({ address: config.temporal.address });
    try {
      const refused = await startStatusServer(takenConfig(busy), new Client({ connection })).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ListenRefusal);
      expect(refused).toMatchObject({
        code: 'EADDRINUSE',
        exitCode: 1,
        message: `cannot listen on 127.0.0.1 port ${busy}: the port is in use; choose another with EBSYNC_STATUS_PORT`,
      });
    } finally {
      await connection.close();
    }
  });

  it('makes the status page beside the main job take a free port, and say why', async () => {
    const busy = Number(new URL(server.url).port);
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
    const page = await startDevStatusPage(takenConfig(busy), logger);
    try {
      expect(page).toBeDefined();
      expect(Number(new URL(page?.url ?? 'http://x/').port)).not.toBe(busy);
      expect(warnings).toEqual([[{ port: busy }, 'status page port in use; it takes a free port']]);
    } finally {
      await page?.close();
    }
  }, 60_000);
});

describe('Sync now', () => {
  it('refuses a connection that needs re-authorization, as ebsync sync does, and starts nothing', async () => {
    const id = `status-reauth-${randomBytes(4).toString('hex')}`;
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const converter = dataConverter(config);
    await t.withWorker(
      { taskQueue, dataConverter: converter, activities: fakeConnectionActivities },
      async () => {
        const { client, close } = await connectClient(config);
        try {
          const handle = await client.workflow.start(connectionWorkflow, {
            taskQueue,
            workflowId: `connection-${id}`,
            args: [keyConnectionInput(id, 'ik_status_reauth_key')],
          });
          // The service refused the key: the connection needs re-authorization.
          const status = await handle.executeUpdate(credentialsRejectedUpdate, {
            args: [{ rejected: 'ik_status_reauth_key' }],
          });
          expect(status.state).toBe('needs_reauth');
          let answer = await send(`/api/connections/${id}/sync`, { method: 'POST', headers: auth });
          // The page learns of the connection with its next report.
          for (let i = 0; i < 20 && answer.status === 404; i++) {
            await new Promise((r) => setTimeout(r, 500));
            answer = await send(`/api/connections/${id}/sync`, { method: 'POST', headers: auth });
          }
          const body = errorShape(answer, 409, 'connection_not_syncable');
          expect(String(body.message)).toMatch(
            new RegExp(
              `^connection '${id}' needs re-authorization .*; nothing was started: run 'ebsync connect`,
            ),
          );
          const started = [];
          for await (const run of client.workflow.list({
            query: `WorkflowId STARTS_WITH 'mirror-${id}-'`,
          }))
            started.push(run.workflowId);
          expect(started).toEqual([]);
          await handle.terminate('test over');
        } finally {
          await close();
        }
      },
    );
  }, 120_000);
});

describe('Pause and Resume of a connection', () => {
  it('say so when the connection was paused already, or not paused, as ebsync connections does', async () => {
    const id = `status-switch-${randomBytes(4).toString('hex')}`;
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    await t.withWorker(
      { taskQueue, dataConverter: dataConverter(config), activities: fakeConnectionActivities },
      async () => {
        const { client, close } = await connectClient(config);
        try {
          const handle = await client.workflow.start(connectionWorkflow, {
            taskQueue,
            workflowId: `connection-${id}`,
            args: [keyConnectionInput(id, 'ik_status_switch_key')],
          });
          const act = async (action: 'pause' | 'resume') => {
            let answer = await send(`/api/connections/${id}/${action}`, {
              method: 'POST',
              headers: auth,
            });
            // The page learns of the connection with its next report.
            for (let i = 0; i < 20 && answer.status === 404; i++) {
              await new Promise((r) => setTimeout(r, 500));
              answer = await send(`/api/connections/${id}/${action}`, {
                method: 'POST',
                headers: auth,
              });
            }
            expect(answer.status, answer.body).toBe(200);
            return JSON.parse(answer.body) as { state: string; message: string };
          };
          expect(await act('resume')).toMatchObject({
            state: 'active',
            message: `not paused: ${id}; nothing to resume, its syncs run`,
          });
          expect(await act('pause')).toMatchObject({ state: 'paused', message: `paused: ${id}` });
          expect(await act('pause')).toMatchObject({
            state: 'paused',
            message: `already paused: ${id}`,
          });
          expect(await act('resume')).toMatchObject({ state: 'active', message: `resumed: ${id}` });
          await handle.terminate('test over');
        } finally {
          await close();
        }
      },
    );
  }, 120_000);
});
