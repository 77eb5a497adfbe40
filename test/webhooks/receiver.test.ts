import { createHmac, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecordActivities } from '../../activities/mirror/refresh-record.js';
import { recordHandOff } from '../../worker/record-hand-off.js';
import type { Delivery } from '../../webhooks/delivery.js';
import { createReceiver, type ConnectionHook, type HandOff } from '../../webhooks/receiver.js';
import type { SignatureScheme } from '../../webhooks/signature.js';
import { recordSummaryQuery, recordWorkflowId } from '../../workflows/record-types.js';
import { closedPort } from '../helpers/ports.js';
import type { TestSandbox } from '../helpers/sandbox.js';
import type { TemporalHarness } from '../helpers/temporal.js';
import {
  closeRecordBed,
  destinationColumn,
  openRecordBed,
  type RecordBed,
  eventually,
  hintBody,
  inLanes,
  newSecret,
  post,
  standardHeaders,
  type Sent,
} from './deliveries.js';

// Record workflow ids are per connection and record, and every test file shares one Temporal
// dev server: a name of its own keeps this file's notices out of another file's workflows.
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

interface Running {
  url: string;
  handedOff: Delivery[];
  close(): Promise<void>;
}

/** A receiver on a free port whose hand-offs are counted on their way to `handOff`. */
async function receiver(
  handOff: HandOff,
  options: { scheme?: SignatureScheme; allowUnsigned?: boolean; bodyLimit?: number } = {},
): Promise<Running> {
  const handedOff: Delivery[] = [];
  const hooks = new Map<string, ConnectionHook>([[CONNECTION, { secret: SECRET, destination }]]);
  const app: FastifyInstance = createReceiver({
    hookOf: (id) => Promise.resolve(hooks.get(id)),
    handOff: async (delivery, hook) => {
      await handOff(delivery, hook);
      handedOff.push(delivery);
    },
    scheme: options.scheme ?? 'standard',
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    allowUnsigned: options.allowUnsigned ?? false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/webhooks/${CONNECTION}`,
    handedOff,
    close: () => app.close(),
  };
}

const leadIds = (): string[] =>
  (
    ts.sb.ctx.db
      .prepare("SELECT id FROM records WHERE type = 'lead' AND business_id = ? ORDER BY id")
      .all(ts.sb.businessId) as { id: number }[]
  ).map((r) => String(r.id));

function expectRefusal(sent: Sent, status: number, reason: string): void {
  expect(sent.status).toBe(status);
  expect(sent.body).toMatchObject({ meta: { status: 'error' }, reason });
  expect(String(sent.body?.message)).not.toContain('\n');
}

describe('webhook receiver', () => {
  it('refuses bad input with a 4xx in the error shape, and starts nothing', async () => {
    const calls: Delivery[] = [];
    const r = await receiver((d) => {
      calls.push(d);
      return Promise.resolve();
    });
    try {
      const body = hintBody('evt_ok', 'lead', 1);
      // The good one passes: the checks below can fail.
      expect((await post(r.url, body, standardHeaders(SECRET, 'evt_ok', body))).status).toBe(200);

      expectRefusal(
        await post(r.url, body, standardHeaders(newSecret(), 'evt_1', body)),
        401,
        'signature_invalid',
      );
      expectRefusal(
        await post(r.url, body, { 'content-type': 'application/json' }),
        401,
        'signature_missing',
      );
      const old = new Date(Date.now() - 6 * 60_000);
      expectRefusal(
        await post(r.url, body, standardHeaders(SECRET, 'evt_2', body, old)),
        401,
        'signature_invalid',
      );
      const future = new Date(Date.now() + 6 * 60_000);
      expectRefusal(
        await post(r.url, body, standardHeaders(SECRET, 'evt_3', body, future)),
        401,
        'signature_invalid',
      );
      // The signature covers the exact bytes: re-serialised JSON is another body.
      const spaced = JSON.stringify(JSON.parse(body), null, 1);
      expectRefusal(
        await post(r.url, spaced, standardHeaders(SECRET, 'evt_4', body)),
        401,
        'signature_invalid',
      );
      const notJson = 'not json';
      expectRefusal(
        await post(r.url, notJson, standardHeaders(SECRET, 'evt_5', notJson)),
        400,
        'malformed_delivery',
      );
      const noData = JSON.stringify({ id: 'evt_6', type: 'lead.updated' });
      const refused = await post(r.url, noData, standardHeaders(SECRET, 'evt_6', noData));
      expectRefusal(refused, 400, 'malformed_delivery');
      expect(refused.body?.message).toMatch(/^data: /);
      const badId = hintBody('evt_7', 'lead', '1; DROP');
      expectRefusal(
        await post(r.url, badId, standardHeaders(SECRET, 'evt_7', badId)),
        400,
        'malformed_delivery',
      );
      const big = JSON.stringify({ pad: 'x'.repeat(70 * 1024) });
      expectRefusal(
        await post(r.url, big, standardHeaders(SECRET, 'evt_8', big)),
        413,
        'body_too_large',
      );
      const other = r.url.replace(`/${CONNECTION}`, '/nobody');
      expectRefusal(
        await post(other, body, standardHeaders(SECRET, 'evt_9', body)),
        404,
        'connection_unknown',
      );
      expectRefusal(
        await post(r.url.replace('/webhooks/', '/hooks/'), body, {}),
        404,
        'route_unknown',
      );

      // A record type ebsync does not mirror is accepted and starts nothing.
      const expense = hintBody('evt_10', 'expense', 3);
      const ignored = await post(r.url, expense, standardHeaders(SECRET, 'evt_10', expense));
      expect(ignored.status).toBe(200);
      expect(ignored.body).toMatchObject({ ignored: true });

      expect(calls.map((d) => d.deliveryId)).toEqual(['evt_ok']);
      expect(calls[0]).toMatchObject({
        connectionId: CONNECTION,
        resource: 'leads',
        recordId: '1',
      });
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
    const calls: Delivery[] = [];
    const handOff: HandOff = (d) => {
      calls.push(d);
      return Promise.resolve();
    };
    const r = await receiver(handOff, { scheme });
    const sign = (body: string, at: number, secret = SECRET): Record<string, string> => {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const mac = createHmac('sha256', key).update(`d-1.${at}.${body}`).digest('hex');
      return { 'x-signature': `sha256=${mac}`, 'x-timestamp': String(at), 'x-delivery-id': 'd-1' };
    };
    try {
      const body = hintBody('evt_body', 'lead_booking', 9);
      const now = Math.floor(Date.now() / 1000);
      expect((await post(r.url, body, sign(body, now))).status).toBe(200);
      expectRefusal(
        await post(r.url, body, sign(body, now, newSecret())),
        401,
        'signature_invalid',
      );
      expectRefusal(await post(r.url, body, sign(body, now - 301)), 401, 'signature_invalid');
      expectRefusal(
        await post(r.url, body, { ...sign(body, now), 'x-timestamp': String(now + 1) }),
        401,
        'signature_invalid',
      );
      expectRefusal(await post(r.url, body, {}), 401, 'signature_missing');
      // The header's id is the dedupe key, not the body's.
      expect(calls.map((d) => [d.deliveryId, d.resource, d.recordId])).toEqual([
        ['d-1', 'lead_bookings', '9'],
      ]);
    } finally {
      await r.close();
    }

    const open = await receiver(handOff, { allowUnsigned: true });
    try {
      const body = hintBody('evt_unsigned', 'event', 4);
      expect((await post(open.url, body, {})).status).toBe(200);
      // A signature that is there is still checked.
      expectRefusal(
        await post(open.url, body, standardHeaders(newSecret(), 'x', body)),
        401,
        'signature_invalid',
      );
    } finally {
      await open.close();
    }
  });

  it('answers 503 with Retry-After when Temporal cannot be reached, so the sender retries', async () => {
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const client = new Client({ connection });
    const r = await receiver(
      recordHandOff(client, { taskQueue: 'nowhere', debounceMs: 10, timeoutMs: 2_000 }),
    );
    try {
      const body = hintBody('evt_down', 'lead', 2);
      const sent = await post(r.url, body, standardHeaders(SECRET, 'evt_down', body));
      expectRefusal(sent, 503, 'temporal_unavailable');
      expect(sent.headers.get('retry-after')).toBe('5');
      expect(r.handedOff).toEqual([]);
    } finally {
      await r.close();
      await connection.close();
    }
  });

  it('applies every valid change of a flood once, with duplicates, bad signatures and malformed bodies refused', async () => {
    // 10,000 as the issue asks: about 40 s on a 2-core machine.
    const total = 10_000;
    const taskQueue = temporal.taskQueue();
    const connectionId = `flood-${randomUUID().slice(0, 8)}`;
    const ids = leadIds();
    const targets = ids.slice(0, 100);
    const untouched = ids.slice(300, 350);
    const hooks = new Map([[connectionId, { secret: SECRET, destination }]]);
    const handedOff: Delivery[] = [];
    const handOff = recordHandOff(temporal.client, { taskQueue, debounceMs: 300 });
    const app = createReceiver({
      hookOf: (id) => Promise.resolve(hooks.get(id)),
      handOff: async (d, hook) => {
        await handOff(d, hook);
        handedOff.push(d);
      },
      scheme: 'standard',
      bodyLimit: 64 * 1024,
      allowUnsigned: false,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/webhooks/${connectionId}`;

    type Kind = 'valid' | 'duplicate' | 'bad-signature' | 'malformed';
    const plan: { kind: Kind; id: string; record: string }[] = [];
    const valid: { id: string; record: string }[] = [];
    for (let i = 0; i < total; i += 1) {
      const roll = i % 100;
      const kind: Kind =
        roll < 20 && valid.length > 0
          ? 'duplicate'
          : roll < 25
            ? 'bad-signature'
            : roll < 26
              ? 'malformed'
              : 'valid';
      if (kind === 'duplicate') {
        plan.push({ kind, ...valid[(i * 7919) % valid.length]! });
      } else if (kind === 'valid') {
        const delivery = { id: `evt_${i}`, record: targets[i % targets.length]! };
        valid.push(delivery);
        plan.push({ kind, ...delivery });
      } else {
        plan.push({ kind, id: `evt_bad_${i}`, record: untouched[i % untouched.length]! });
      }
    }
    const statuses = new Map<Kind, number[]>();
    const send = async (item: (typeof plan)[number]): Promise<void> => {
      const body =
        item.kind === 'malformed'
          ? `{"id":"${item.id}","data":{"record_type":"lead","id":"${item.record}"`
          : hintBody(item.id, 'lead', item.record);
      const secret = item.kind === 'bad-signature' ? newSecret() : SECRET;
      const sent = await post(url, body, standardHeaders(secret, item.id, body));
      const list = statuses.get(item.kind) ?? [];
      list.push(sent.status);
      statuses.set(item.kind, list);
    };

    await temporal.withWorker(
      {
        taskQueue,
        activities: createRecordActivities(deps),
        maxConcurrentActivityTaskExecutions: 20,
      },
      async () => {
        try {
          // Staff edit every target half-way through; the deliveries after it must carry
          // the edit into the destination.
          const half = Math.floor(plan.length / 2);
          await inLanes(plan.slice(0, half), 24, send);
          for (const id of targets)
            ts.sb.admin.patchRecord('lead', Number(id), { first_name: `Flood ${id}` });
          await inLanes(plan.slice(half), 24, send);
          // One more notice per target after the edit, so that each has one for sure.
          const last = targets.map((record) => ({
            kind: 'valid' as const,
            id: `evt_last_${record}`,
            record,
          }));
          valid.push(...last);
          await inLanes(last, 24, send);

          const file = destination.slice('sqlite:'.length);
          await eventually(
            () => {
              const names = destinationColumn(file, 'leads', 'first_name');
              return targets.every((id) => names.get(id) === `Flood ${id}`);
            },
            90_000,
            'every target lead carries its edit in the destination',
          );
          const summaries = await Promise.all(
            targets.map((record) =>
              temporal.client.workflow
                .getHandle(recordWorkflowId(connectionId, 'leads', record))
                .query(recordSummaryQuery),
            ),
          );
          const notices = summaries.reduce((n, s) => n + s.notices, 0);
          const duplicates = summaries.reduce((n, s) => n + s.duplicates, 0);
          const dupSent = plan.filter((p) => p.kind === 'duplicate').length;
          // Each unique valid delivery taken once; every duplicate dropped as one.
          expect(notices).toBe(valid.length);
          expect(duplicates).toBe(dupSent);
          // Bursts coalesce: far fewer reads than notices.
          const reads = summaries.reduce((n, s) => n + s.reads, 0);
          expect(reads).toBeLessThan(notices);
        } finally {
          await app.close();
        }
      },
    );

    expect(new Set(statuses.get('valid'))).toEqual(new Set([200]));
    expect(new Set(statuses.get('duplicate'))).toEqual(new Set([200]));
    expect(new Set(statuses.get('bad-signature'))).toEqual(new Set([401]));
    expect(new Set(statuses.get('malformed'))).toEqual(new Set([400]));
    expect(handedOff.length).toBe(valid.length + plan.filter((p) => p.kind === 'duplicate').length);
    for (const record of untouched.slice(0, 10)) {
      const started = await noWorkflowForConnection(connectionId, record);
      expect(started).toBe(true);
    }
  }, 300_000);
});

async function noWorkflowForConnection(connectionId: string, recordId: string): Promise<boolean> {
  try {
    await temporal.client.workflow
      .getHandle(recordWorkflowId(connectionId, 'leads', recordId))
      .describe();
    return false;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return true;
    throw error;
  }
}
