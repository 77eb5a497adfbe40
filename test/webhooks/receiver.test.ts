import { createHmac, randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { DEFAULT_LIMITS, type ConnectionHook, type ServerLimits } from '../../webhooks/receiver.js';
import { ReceiverStatsRecorder } from '../../webhooks/receiver-stats.js';
import type { SignatureScheme } from '../../webhooks/signature.js';
import { openInbox } from '../../store/open-inbox.js';
import type { TestSandbox } from '../helpers/sandbox.js';
import type { TemporalHarness } from '../helpers/temporal.js';
import { closedPort } from '../helpers/ports.js';
import {
  closeRecordBed,
  destinationColumn,
  eventually,
  hintBody,
  inLanes,
  newSecret,
  openRecordBed,
  post,
  standardHeaders,
  startTestReceiver,
  webhookActivities,
  type RecordBed,
  type Sent,
  type TestReceiver,
} from './deliveries.js';
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
  type Kind,
} from './flood.js';

// Drain workflow ids are per connection, and every test file shares one Temporal dev server:
// a name of its own keeps this file's notices out of another file's drains.
const CONNECTION = 'receiver-shop';
const SECRET = newSecret();
let bed: RecordBed | undefined;
let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
let destination: string;
let deps: RecordBed['deps'];

beforeAll(async () => {
  bed = await openRecordBed({ leads: 400, events: 5 }, 'ebsync-webhooks-');
  ({ ts, temporal, dir, deps } = bed);
  destination = `sqlite:${join(dir, 'mirror.db')}`;
});

afterAll(() => closeRecordBed(bed));

/** A receiver on a free port storing into this file's inbox; no worker drains it. */
function receiver(
  options: {
    scheme?: SignatureScheme;
    allowUnsigned?: boolean;
    connection?: string;
    stats?: ReceiverStatsRecorder;
    limits?: ServerLimits;
  } = {},
): Promise<TestReceiver> {
  const hooks = new Map<string, ConnectionHook>([
    [options.connection ?? CONNECTION, { secret: SECRET, destination }],
  ]);
  return startTestReceiver({
    hooks,
    deps,
    client: temporal.client,
    // No worker polls it: the notices stay in the inbox for the test to read.
    taskQueue: `no-worker-${randomUUID()}`,
    ...options,
  });
}

const pendingIds = async (connectionId: string): Promise<string[]> =>
  (await (await deps.inbox()).pending(connectionId, 1_000)).map((n) => n.deliveryId);

function expectRefusal(sent: Pick<Sent, 'status' | 'body'>, status: number, reason: string): void {
  expect(sent.status).toBe(status);
  // `status` names the HTTP status, in snake case (413 payload_too_large, 431 request_header_fields_too_large).
  const name = (STATUS_CODES[status] ?? '').toLowerCase().replace(/[^a-z0-9]+/g, '_');
  expect(sent.body).toMatchObject({ meta: { status: 'error' }, status: name, reason });
  expect(String(sent.body?.message)).not.toContain('\n');
}

describe('webhook receiver', () => {
  it('refuses bad input with a 4xx in the error shape, and stores nothing', async () => {
    const connection = `bad-input-${randomUUID().slice(0, 8)}`;
    const r = await receiver({ connection });
    const url = r.url(connection);
    try {
      const body = hintBody('evt_ok', 'lead', 1);
      // The good one passes: the checks below can fail.
      expect((await post(url, body, standardHeaders(SECRET, 'evt_ok', body))).status).toBe(200);
      // Whatever its Content-Type says, even none that is a media type, the body is read as
      // bytes: a sender's header quirk loses no delivery.
      for (const [i, type] of ['', ';', 'json', 'text/plain'].entries()) {
        const headers = { ...standardHeaders(SECRET, `evt_type_${i}`, body), 'content-type': type };
        expect((await post(url, body, headers)).status, `content-type '${type}'`).toBe(200);
      }

      expectRefusal(
        await post(url, body, standardHeaders(newSecret(), 'evt_1', body)),
        401,
        'signature_invalid',
      );
      expectRefusal(
        await post(url, body, { 'content-type': 'application/json' }),
        401,
        'signature_missing',
      );
      const old = new Date(Date.now() - 6 * 60_000);
      expectRefusal(
        await post(url, body, standardHeaders(SECRET, 'evt_2', body, old)),
        401,
        'signature_invalid',
      );
      const future = new Date(Date.now() + 6 * 60_000);
      expectRefusal(
        await post(url, body, standardHeaders(SECRET, 'evt_3', body, future)),
        401,
        'signature_invalid',
      );
      // The signature covers the exact bytes: re-serialised JSON is another body.
      const spaced = JSON.stringify(JSON.parse(body), null, 1);
      expectRefusal(
        await post(url, spaced, standardHeaders(SECRET, 'evt_4', body)),
        401,
        'signature_invalid',
      );
      const notJson = 'not json';
      expectRefusal(
        await post(url, notJson, standardHeaders(SECRET, 'evt_5', notJson)),
        400,
        'malformed_delivery',
      );
      const noData = JSON.stringify({ id: 'evt_6', type: 'lead.updated' });
      const refused = await post(url, noData, standardHeaders(SECRET, 'evt_6', noData));
      expectRefusal(refused, 400, 'malformed_delivery');
      expect(refused.body?.message).toMatch(/^data: /);
      const badId = hintBody('evt_7', 'lead', '1; DROP');
      expectRefusal(
        await post(url, badId, standardHeaders(SECRET, 'evt_7', badId)),
        400,
        'malformed_delivery',
      );
      // The id is the dedupe key: an empty one, signed, was stored, and each later delivery
      // with an empty id was answered as its duplicate and lost. Refused, as is one too long.
      for (const id of ['', 'x'.repeat(201), 'evt 9']) {
        const hint = hintBody('evt_9', 'lead', 9);
        const refusedId = await post(url, hint, standardHeaders(SECRET, id, hint));
        expectRefusal(refusedId, 400, 'malformed_delivery');
        expect(refusedId.body?.message).toMatch(/^the delivery id \(its header\) must be 1 to 200/);
      }
      // An id that is not ASCII (é, sent as its byte) is said as such, before its signature,
      // which Node's latin1 reading of header bytes could never match: it was a 401.
      const hint = hintBody('evt_10', 'lead', 10);
      const accented = await post(url, hint, standardHeaders(SECRET, 'evt_\u00e9', hint));
      expectRefusal(accented, 400, 'malformed_delivery');
      expect(accented.body?.message).toMatch(/^the delivery id \(its header\) must be 1 to 200/);
      // A signature without its other headers: missing, and which.
      const noTimestamp: Record<string, string> = { ...standardHeaders(SECRET, 'evt_11', hint) };
      delete noTimestamp['webhook-timestamp'];
      const unstamped = await post(url, hint, noTimestamp);
      expectRefusal(unstamped, 401, 'signature_missing');
      expect(unstamped.body?.message).toMatch(/; missing: webhook-timestamp$/);
      const big = JSON.stringify({ pad: 'x'.repeat(70 * 1024) });
      expectRefusal(
        await post(url, big, standardHeaders(SECRET, 'evt_8', big)),
        413,
        'body_too_large',
      );
      expectRefusal(
        await post(url.replace('/webhooks/', '/hooks/'), body, {}),
        404,
        'route_unknown',
      );
      // A GET of the delivery route says the method a sender must use, not the one it used.
      const got = await fetch(url);
      expect(got.status).toBe(404);
      expect(await got.json()).toMatchObject({
        reason: 'route_unknown',
        message: 'no such route: only POST /webhooks/{connection} is served',
      });
      // Paths the router itself refuses: undecodable, or a connection id past its length.
      const base = url.slice(0, url.indexOf('/webhooks/') + '/webhooks/'.length);
      expectRefusal(await post(`${base}%ff`, body, {}), 400, 'bad_path');
      expectRefusal(await post(`${base}${'c'.repeat(3000)}`, body, {}), 400, 'bad_path');

      // A record type ebsync does not mirror is accepted and stores nothing.
      const expense = hintBody('evt_10', 'expense', 3);
      const ignored = await post(url, expense, standardHeaders(SECRET, 'evt_10', expense));
      expect(ignored.status).toBe(200);
      expect(ignored.body).toMatchObject({ ignored: true });

      const [stored] = await (await deps.inbox()).pending(connection, 10);
      // The good ones only, whatever their Content-Type.
      expect(await pendingIds(connection)).toEqual([
        'evt_ok',
        'evt_type_0',
        'evt_type_1',
        'evt_type_2',
        'evt_type_3',
      ]);
      expect(stored).toMatchObject({ connectionId: connection, resource: 'leads', recordId: '1' });
    } finally {
      await r.close();
    }
  });

  it('answers a connection without webhooks exactly as a bad signature, so names cannot be told apart', async () => {
    const r = await receiver();
    try {
      const known = r.url(CONNECTION);
      const body = hintBody('evt_probe', 'lead', 1);
      const probes: Record<string, string>[] = [
        standardHeaders(newSecret(), 'evt_probe', body),
        standardHeaders(newSecret(), 'evt_probe', body, new Date(Date.now() - 10 * 60_000)),
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json', 'webhook-id': 'x', 'webhook-signature': 'v1,x' },
      ];
      for (const headers of probes) {
        const fromKnown = await post(known, body, headers);
        expect(fromKnown.status).toBe(401);
        for (const other of ['nobody', 'receiver-shop-2', 'Not_A_Name', 'x'.repeat(80)]) {
          const fromUnknown = await post(r.url(other), body, headers);
          expect({ status: fromUnknown.status, body: fromUnknown.body }).toEqual({
            status: fromKnown.status,
            body: fromKnown.body,
          });
        }
      }
      // What a wrong secret is told names the other cause it cannot be told from.
      const wrong = await post(known, body, standardHeaders(newSecret(), 'evt_probe', body));
      expect(wrong.body?.message).toBe(
        "the signature does not match the body as signed with this connection's secret, or the connection has no webhooks registered at this receiver",
      );
      expect(await pendingIds('nobody')).toEqual([]);
    } finally {
      await r.close();
    }
  });

  it('checks a configured HMAC header scheme, and unsigned deliveries only when allowed', async () => {
    const scheme: SignatureScheme = {
      header: 'x-signature',
      algorithm: 'sha256',
      encoding: 'hex',
      prefix: 'sha256=',
      timestampHeader: 'x-timestamp',
      idHeader: 'x-delivery-id',
    };
    const connection = `hmac-${randomUUID().slice(0, 8)}`;
    const r = await receiver({ scheme, connection });
    const url = r.url(connection);
    const sign = (body: string, at: number, secret = SECRET): Record<string, string> => {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const mac = createHmac('sha256', key).update(`d-1.${at}.${body}`).digest('hex');
      return { 'x-signature': `sha256=${mac}`, 'x-timestamp': String(at), 'x-delivery-id': 'd-1' };
    };
    try {
      const body = hintBody('evt_body', 'lead_booking', 9);
      const now = Math.floor(Date.now() / 1000);
      expect((await post(url, body, sign(body, now))).status).toBe(200);
      expectRefusal(await post(url, body, sign(body, now, newSecret())), 401, 'signature_invalid');
      expectRefusal(await post(url, body, sign(body, now - 301)), 401, 'signature_invalid');
      expectRefusal(
        await post(url, body, { ...sign(body, now), 'x-timestamp': String(now + 1) }),
        401,
        'signature_invalid',
      );
      expectRefusal(await post(url, body, {}), 401, 'signature_missing');
      // The header's id is the dedupe key, not the body's.
      const pending = await (await deps.inbox()).pending(connection, 10);
      expect(pending.map((n) => [n.deliveryId, n.resource, n.recordId])).toEqual([
        ['d-1', 'lead_bookings', '9'],
      ]);
    } finally {
      await r.close();
    }

    const unsigned = `unsigned-${randomUUID().slice(0, 8)}`;
    const open = await receiver({ allowUnsigned: true, connection: unsigned });
    try {
      const body = hintBody('evt_unsigned', 'event', 4);
      expect((await post(open.url(unsigned), body, {})).status).toBe(200);
      // A signature that is there is still checked.
      expectRefusal(
        await post(open.url(unsigned), body, standardHeaders(newSecret(), 'x', body)),
        401,
        'signature_invalid',
      );
      // The id header names an unsigned delivery too, as the docs say: a body may leave out its id.
      const noBodyId = JSON.stringify({
        type: 'lead.updated',
        data: { record_type: 'lead', id: '5', action: 'updated' },
      });
      const named = await post(open.url(unsigned), noBodyId, { 'webhook-id': 'evt_header_id' });
      expect(named).toMatchObject({ status: 200, body: { delivery_id: 'evt_header_id' } });
      expect(await pendingIds(unsigned)).toEqual(['evt_unsigned', 'evt_header_id']);
    } finally {
      await open.close();
    }
  });

  it('answers a repeated delivery 2xx without storing it again', async () => {
    const connection = `repeat-${randomUUID().slice(0, 8)}`;
    const r = await receiver({ connection });
    try {
      const body = hintBody('evt_twice', 'lead', 2);
      const first = await post(r.url(connection), body, standardHeaders(SECRET, 'evt_twice', body));
      const again = await post(r.url(connection), body, standardHeaders(SECRET, 'evt_twice', body));
      expect(first).toMatchObject({ status: 200, body: { delivery_id: 'evt_twice' } });
      expect(first.body).not.toHaveProperty('duplicate');
      expect(again).toMatchObject({ status: 200, body: { duplicate: true } });
      expect(await pendingIds(connection)).toEqual(['evt_twice']);
    } finally {
      await r.close();
    }
  });

  it('answers 503 with Retry-After when the store cannot be reached, so the sender retries', async () => {
    const store = `postgres://ebsync:secret@127.0.0.1:${await closedPort()}/ebsync`;
    const unreachable = {
      ...deps,
      inbox: () => openInbox(store),
    };
    const r = await startTestReceiver({
      hooks: new Map([[CONNECTION, { secret: SECRET, destination }]]),
      deps: unreachable,
      client: temporal.client,
      taskQueue: `no-worker-${randomUUID()}`,
    });
    try {
      const body = hintBody('evt_down', 'lead', 2);
      const sent = await post(r.url(CONNECTION), body, standardHeaders(SECRET, 'evt_down', body));
      expectRefusal(sent, 503, 'store_unavailable');
      expect(sent.headers.get('retry-after')).toBe('5');
      expect(JSON.stringify(sent.body)).not.toContain('secret');
    } finally {
      await r.close();
    }
  });

  it("answers 503 within the request's time when another process holds the store's lock", async () => {
    const connection = `locked-${randomUUID().slice(0, 8)}`;
    const limits = { ...DEFAULT_LIMITS, requestTimeoutMs: 3_000, headersTimeoutMs: 2_000 };
    const r = await receiver({ connection, limits });
    const lock = new Database(join(dir, 'store.db'));
    try {
      lock.pragma('busy_timeout = 5000');
      lock.exec('BEGIN EXCLUSIVE');
      const body = hintBody('evt_locked', 'lead', 3);
      const started = Date.now();
      const sent = await post(r.url(connection), body, standardHeaders(SECRET, 'evt_locked', body));
      // Half the request timeout: an answer, where the sender used to get a closed socket.
      expectRefusal(sent, 503, 'store_unavailable');
      expect(sent.headers.get('retry-after')).toBe('5');
      expect(Date.now() - started).toBeLessThan(limits.requestTimeoutMs);
      lock.exec('COMMIT');
      // The sender retries: stored once, whether the first commit got through after its 503.
      const again = await post(
        r.url(connection),
        body,
        standardHeaders(SECRET, 'evt_locked', body),
      );
      expect(again.status).toBe(200);
      expect(await pendingIds(connection)).toEqual(['evt_locked']);
    } finally {
      if (lock.inTransaction) lock.exec('ROLLBACK');
      lock.close();
      await r.close();
    }
  });

  it('answers headers over the limit in the error shape, and counts them and a bad path as rejected', async () => {
    const stats = new ReceiverStatsRecorder();
    const r = await receiver({ stats });
    try {
      const body = hintBody('evt_big', 'lead', 1);
      const big = await post(r.url(CONNECTION), body, {
        ...standardHeaders(SECRET, 'evt_big', body),
        'x-padding': 'a'.repeat(20_000),
      });
      expectRefusal(big, 431, 'headers_too_large');
      const badPath = await post(
        r.url(CONNECTION).replace(CONNECTION, 'sh%ZZ'),
        body,
        standardHeaders(SECRET, 'evt_bad_path', body),
      );
      expectRefusal(badPath, 400, 'bad_path');
      // Counted once the answer has gone (Fastify's onResponse; the 431 before any route).
      await eventually(
        () => stats.snapshot().rejected === 2,
        5_000,
        'the oversized headers and the bad path counted',
      );
    } finally {
      await r.close();
    }
  });

  it('answers in the error shape what Node refused itself with no body (no Host, an Expect it does not take, headers late), and counts them', async () => {
    const stats = new ReceiverStatsRecorder();
    const r = await receiver({
      stats,
      limits: { ...DEFAULT_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: 2_000 },
    });
    const { hostname, port } = new URL(r.url(CONNECTION));
    /** What the receiver wrote back to `head` (and a body of `{}`), up to its close. */
    const exchange = (head: string, late = false): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname);
        let received = '';
        socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
        socket.on('error', reject);
        socket.on('close', () => resolve(received));
        // Late headers: the first line now, the rest never (the headers timeout answers).
        socket.once('connect', () => socket.write(late ? head.split('\r\n')[0]! : head));
        setTimeout(() => socket.destroy(), 5_000);
      });
    const answerOf = (text: string) => ({
      status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]),
      body: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>,
    });
    try {
      const path = new URL(r.url(CONNECTION)).pathname;
      const noHost = answerOf(
        await exchange(`POST ${path} HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`),
      );
      expectRefusal(noHost, 400, 'host_missing');
      const expectation = answerOf(
        await exchange(
          `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nExpect: something\r\nContent-Length: 2\r\n\r\n{}`,
        ),
      );
      expectRefusal(expectation, 417, 'expectation_not_supported');
      const late = answerOf(await exchange(`POST ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, true));
      expectRefusal(late, 408, 'request_timeout');
      expect(late.body.message).toBe(
        'The request was not received in time: its headers within 0.5 s, all of it within 2 s',
      );
      await eventually(() => stats.snapshot().rejected === 3, 5_000, 'the three refusals counted');
    } finally {
      await r.close();
    }
  });

  it('counts deliveries to a registered connection refused for their signature, by connection, for the status', async () => {
    const stats = new ReceiverStatsRecorder();
    const r = await receiver({ stats });
    try {
      const body = hintBody('evt_other_secret', 'lead', 1);
      // Signed with another secret (the service re-registered), twice; then a late timestamp.
      for (const id of ['evt_other_1', 'evt_other_2']) {
        const sent = await post(r.url(CONNECTION), body, standardHeaders(newSecret(), id, body));
        expectRefusal(sent, 401, 'signature_invalid');
      }
      const late = standardHeaders(SECRET, 'evt_late', body, new Date(Date.now() - 10 * 60_000));
      expectRefusal(await post(r.url(CONNECTION), body, late), 401, 'signature_invalid');
      // Not counted: no signature at all, and a connection with nothing registered here.
      expectRefusal(await post(r.url(CONNECTION), body, {}), 401, 'signature_missing');
      const stranger = await post(
        r.url('not-registered'),
        body,
        standardHeaders(newSecret(), 'evt_x', body),
      );
      expectRefusal(stranger, 401, 'signature_invalid');
      const refused = stats.snapshot().signatureRefused;
      expect(refused).toEqual([
        {
          connectionId: CONNECTION,
          count: 3,
          lastAt: expect.any(Number) as number,
          lastVerifiedAt: null,
        },
      ]);
      // A delivery signed with the secret: its time is kept beside the refusals.
      const good = hintBody('evt_good', 'lead', 1);
      const sent = await post(r.url(CONNECTION), good, standardHeaders(SECRET, 'evt_good', good));
      expect(sent.status).toBe(200);
      const [after] = stats.snapshot().signatureRefused ?? [];
      expect(after?.lastVerifiedAt).toBeGreaterThanOrEqual(after?.lastAt ?? Infinity);
    } finally {
      await r.close();
    }
  });

  it('closes slow clients within the configured timeouts while valid deliveries keep being answered', async () => {
    const limits = {
      requestTimeoutMs: 3_000,
      headersTimeoutMs: 2_000,
      keepAliveTimeoutMs: 2_000,
      connectionTimeoutMs: 10_000,
      maxConnections: 1_000,
    };
    const connection = `slow-${randomUUID().slice(0, 8)}`;
    const r = await startTestReceiver({
      hooks: new Map([[connection, { secret: SECRET, destination }]]),
      deps,
      client: temporal.client,
      taskQueue: `no-worker-${randomUUID()}`,
      limits,
    });
    const { hostname, port, pathname } = new URL(r.url(connection));
    const sockets: { socket: Socket; openedAt: number; closedAt?: number }[] = [];
    const drips: NodeJS.Timeout[] = [];
    try {
      // 100 send their headers and then one body byte every 500 ms (never idle long enough
      // for the idle timeout: the request timeout must close them); 100 send their headers
      // one byte at a time.
      for (let i = 0; i < 200; i += 1) {
        const socket = connect(Number(port), hostname);
        const entry: (typeof sockets)[number] = { socket, openedAt: Date.now() };
        sockets.push(entry);
        socket.on('error', () => undefined);
        socket.on('close', () => (entry.closedAt = Date.now()));
        const head =
          `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n';
        let sent = 0;
        if (i % 2 === 0) socket.write(head);
        drips.push(
          setInterval(() => {
            if (socket.destroyed) return;
            socket.write(i % 2 === 0 ? '{' : head.slice(sent, sent + 1));
            sent += 1;
          }, 500),
        );
      }
      // Valid deliveries meanwhile, one every 100 ms: each answered.
      const answered: number[] = [];
      const started = Date.now();
      for (let i = 0; Date.now() - started < 6_000; i += 1) {
        const id = `evt_slow_${i}`;
        const body = hintBody(id, 'lead', 3);
        answered.push(
          (await post(r.url(connection), body, standardHeaders(SECRET, id, body))).status,
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(answered.length).toBeGreaterThan(10);
      expect(new Set(answered)).toEqual(new Set([200]));
      await eventually(
        () => sockets.every((s) => s.closedAt !== undefined),
        15_000,
        'every slow socket closed',
      );
      // Node checks the timeouts once a second: closed by the timeout plus that, and a margin
      // for a loaded machine, never after 130 s as before.
      const slowest = Math.max(...sockets.map((s) => s.closedAt! - s.openedAt));
      expect(slowest).toBeLessThan(limits.requestTimeoutMs + 1_000 + 4_000);
    } finally {
      for (const drip of drips) clearInterval(drip);
      for (const s of sockets) s.socket.destroy();
      await r.close();
    }
  }, 60_000);

  it('holds at most the configured number of connections', async () => {
    const connection = `cap-${randomUUID().slice(0, 8)}`;
    const r = await startTestReceiver({
      hooks: new Map([[connection, { secret: SECRET, destination }]]),
      deps,
      client: temporal.client,
      taskQueue: `no-worker-${randomUUID()}`,
      limits: {
        requestTimeoutMs: 10_000,
        headersTimeoutMs: 5_000,
        keepAliveTimeoutMs: 5_000,
        connectionTimeoutMs: 10_000,
        maxConnections: 20,
      },
    });
    const { hostname, port } = new URL(r.url(connection));
    const sockets: Socket[] = [];
    try {
      const closed = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          // One after another, so the first 20 are the ones held.
          await new Promise((resolve) => setTimeout(resolve, i * 20));
          const socket = connect(Number(port), hostname);
          sockets.push(socket);
          socket.on('error', () => undefined);
          return new Promise<boolean>((resolve) => {
            socket.once('close', () => resolve(true));
            setTimeout(() => resolve(false), 3_000);
          });
        }),
      );
      expect(closed.filter(Boolean)).toHaveLength(10);
    } finally {
      for (const socket of sockets) socket.destroy();
      await r.close();
    }
  });

  it('applies every valid change of a flood once and in order, with repeats, bad signatures and malformed bodies refused', async () => {
    // 10,000 as the issue asks: about a minute on a loaded 2-core machine.
    const phases = 4;
    const taskQueue = temporal.taskQueue();
    const connectionId = `flood-${randomUUID().slice(0, 8)}`;
    const floodDestination = `sqlite:${join(dir, `flood-${connectionId}.db`)}`;
    await logLeadWrites(floodDestination);
    const { targets, untouched } = floodLeads(ts.sb);
    const flood = floodPlan({ total: 10_000, phases, targets, untouched, prefix: 'evt' });
    const hooks = new Map([[connectionId, { secret: SECRET, destination: floodDestination }]]);
    const r = await startTestReceiver({ hooks, deps, client: temporal.client, taskQueue });
    const statuses = new Map<Kind, number[]>();
    const send = async (item: (typeof flood.last)[number]) => {
      const sent = await sendItem(r.url(connectionId), SECRET, item);
      statuses.set(item.kind, [...(statuses.get(item.kind) ?? []), sent.status]);
    };

    await temporal.withWorker(
      { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
      async () => {
        try {
          for (const [phase, items] of flood.phases.entries()) {
            for (const id of targets)
              ts.sb.admin.patchRecord('lead', Number(id), { first_name: floodName(id, phase + 1) });
            await inLanes(items, 24, send);
          }
          await inLanes(flood.last, 24, send);
          const file = floodDestination.slice('sqlite:'.length);
          await eventually(
            () => {
              const names = destinationColumn(file, 'leads', 'first_name');
              return targets.every((id) => names.get(id) === floodName(id, phases));
            },
            120_000,
            'every target lead carries its last edit in the destination',
          );
          await eventually(
            async () => (await pendingIds(connectionId)).length === 0,
            60_000,
            'the inbox drained',
          );
        } finally {
          await r.close();
        }
      },
    );

    expectStatuses(statuses);
    await expectInboxOf(`sqlite:${join(dir, 'store.db')}`, connectionId, flood);
    const writes = await leadWrites(floodDestination);
    expectInOrder(writes, targets, phases);
    // The records bad deliveries named were never read, so never written.
    expect(untouched.filter((id) => writes.has(id))).toEqual([]);
  }, 400_000);
});
