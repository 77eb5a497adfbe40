import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** A local endpoint; `respond` picks the status per delivery (or hangs with 'hang'). */
async function receiver(respond: (n: number) => number | 'hang' = () => 204): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const status = respond(received.length);
      if (status === 'hang') return;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function verify(secret: string, delivery: Received): any {
  return new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
}

let t: TestSandbox;
const receivers: Receiver[] = [];
async function track(r: Promise<Receiver>): Promise<Receiver> {
  const ready = await r;
  receivers.push(ready);
  return ready;
}

beforeAll(async () => {
  t = await startTestSandbox({
    webhooks: { backoffMs: 20, backoffCapMs: 100, maxAttempts: 3, timeoutMs: 300 },
  });
});
afterEach(async () => {
  for (const endpoint of t.sb.admin.webhooks()) t.sb.admin.deleteWebhook(endpoint.id);
  await t.sb.admin.webhooksIdle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

function insertLead(name = 'Jamie') {
  return t.sb.ctx.records.insert('lead', t.sb.businessId, (id) => ({ id, first_name: name }));
}

describe('outgoing webhooks', () => {
  it('delivers a Standard Webhooks signed hint for a record created in the store', async () => {
    const r = await track(receiver());
    const endpoint = t.sb.admin.addWebhook({ url: r.url });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const lead = insertLead();
    await until(() => r.received.length === 1);
    const [delivery] = r.received;
    if (!delivery) throw new Error('no delivery');
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const payload = verify(endpoint.secret, delivery);
    expect(payload).toEqual({
      id: delivery.headers['webhook-id'],
      type: 'lead.created',
      occurred_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      business_id: t.sb.businessId,
      data: { record_type: 'lead', id: String(lead.id), action: 'created' },
    });
    expect(payload.id).toMatch(/^evt_/);
    // A wrong secret does not verify.
    expect(() =>
      verify(`whsec_${Buffer.from('x'.repeat(24)).toString('base64')}`, delivery),
    ).toThrow();
  });

  it('delivers a change made through the admin API', async () => {
    const r = await track(receiver());
    const endpoint = t.sb.admin.addWebhook({ url: r.url });
    const lead = insertLead();
    await until(() => r.received.length === 1);
    const res = await t.request('PATCH', `/admin/records/lead/${lead.id}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      json: { attributes: { first_name: 'Jordan' } },
    });
    expect(res.status).toBe(200);
    await until(() => r.received.length === 2);
    const payload = verify(endpoint.secret, r.received[1] as Received);
    expect(payload.type).toBe('lead.updated');
    expect(payload.data).toEqual({ record_type: 'lead', id: String(lead.id), action: 'updated' });

    await t.request('DELETE', `/admin/records/lead/${lead.id}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
    });
    await until(() => r.received.length === 3);
    expect(verify(endpoint.secret, r.received[2] as Received).type).toBe('lead.deleted');
  });

  it("deletes an event's bookings with it, each delivered, so a mirror fed by webhooks drops them", async () => {
    const r = await track(receiver());
    const endpoint = t.sb.admin.addWebhook({ url: r.url });
    const records = t.sb.ctx.records;
    const business = t.sb.businessId;
    const withBooking = () => {
      const event = records.insert('event', business, (id) => ({ id, name: 'Gala' }));
      const booking = records.insert(
        'event_booking',
        business,
        (id) => ({ id, event_id: event.id }),
        {
          parentId: event.id,
        },
      );
      return { event, booking };
    };
    const soft = withBooking();
    const hard = withBooking();
    await until(() => r.received.length === 4);
    const remove = (id: number, query: Record<string, string> = {}) =>
      t.request('DELETE', `/admin/records/event/${id}`, {
        key: null,
        headers: { 'x-admin-token': t.sb.adminToken },
        query,
      });
    expect((await remove(soft.event.id)).status).toBe(200);
    expect((await remove(hard.event.id, { hard: 'true' })).status).toBe(200);
    await until(() => r.received.length === 8);
    expect(r.received.slice(4).map((d) => verify(endpoint.secret, d).data)).toEqual([
      { record_type: 'event_booking', id: String(soft.booking.id), action: 'deleted' },
      { record_type: 'event', id: String(soft.event.id), action: 'deleted' },
      { record_type: 'event_booking', id: String(hard.booking.id), action: 'deleted' },
      { record_type: 'event', id: String(hard.event.id), action: 'deleted' },
    ]);
    expect(
      records.get('event_booking', business, soft.booking.id, { includeDeleted: true })?.deletedAt,
    ).toBeTruthy();
    expect(
      records.get('event_booking', business, hard.booking.id, { includeDeleted: true }),
    ).toBeUndefined();
  });

  it('ignores record types outside the announced list and honours an endpoint type filter', async () => {
    const all = await track(receiver());
    const expensesOnly = await track(receiver());
    t.sb.admin.addWebhook({ url: all.url });
    t.sb.admin.addWebhook({ url: expensesOnly.url, types: ['expense'] });
    t.sb.ctx.records.insert('service', t.sb.businessId, (id) => ({ id, name: 'Ignored' }));
    insertLead();
    t.sb.ctx.records.insert('expense', t.sb.businessId, (id) => ({ id, amount_cents: 100 }));
    await t.sb.admin.webhooksIdle();
    expect(all.received.map((d) => JSON.parse(d.body).type)).toEqual([
      'lead.created',
      'expense.created',
    ]);
    expect(expensesOnly.received.map((d) => JSON.parse(d.body).type)).toEqual(['expense.created']);
  });

  it('retries with backoff: fails twice then succeeds in three attempts', async () => {
    const r = await track(receiver((n) => (n <= 2 ? 503 : 200)));
    const endpoint = t.sb.admin.addWebhook({ url: r.url });
    const before = t.sb.admin.counters();
    insertLead();
    await until(() => r.received.length === 3);
    await t.sb.admin.webhooksIdle();
    const after = t.sb.admin.counters();
    expect(after.webhook_attempts - before.webhook_attempts).toBe(3);
    expect(after.webhook_deliveries - before.webhook_deliveries).toBe(1);
    expect(after.webhook_failures - before.webhook_failures).toBe(0);
    // Same message id on every attempt so the receiver can dedupe; each is signed afresh.
    const ids = new Set(r.received.map((d) => d.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const d of r.received) verify(endpoint.secret, d);
    // Backoff: the gaps grow (20 ms, then 40 ms).
    const [a, b, c] = r.received.map((d) => d.at) as [number, number, number];
    expect(b - a).toBeGreaterThanOrEqual(15);
    expect(c - b).toBeGreaterThanOrEqual(35);

    const log = await t.request('GET', '/admin/webhooks/deliveries', {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      query: { endpoint_id: endpoint.id },
    });
    expect(log.status).toBe(200);
    expect(log.body.data.map((d: any) => [d.attempt, d.outcome, d.http_status])).toEqual([
      [1, 'failed', 503],
      [2, 'failed', 503],
      [3, 'delivered', 200],
    ]);
  });

  it('gives up after the configured attempts, and counts timeouts as failures', async () => {
    const r = await track(receiver(() => 'hang'));
    const endpoint = t.sb.admin.addWebhook({ url: r.url });
    const before = t.sb.admin.counters();
    insertLead();
    await until(() => r.received.length === 3);
    await t.sb.admin.webhooksIdle();
    const after = t.sb.admin.counters();
    expect(after.webhook_failures - before.webhook_failures).toBe(1);
    expect(after.webhook_deliveries - before.webhook_deliveries).toBe(0);
    const log = t.sb.admin.deliveries({ endpointId: endpoint.id });
    expect(log.map((d) => d.outcome)).toEqual(['failed', 'failed', 'gave_up']);
    expect(log[0]?.error).toMatch(/timeout/);
  });

  it('delivers in change order per endpoint, even across a retry', async () => {
    const r = await track(receiver((n) => (n === 1 ? 500 : 204)));
    t.sb.admin.addWebhook({ url: r.url });
    const ids = [insertLead('a').id, insertLead('b').id, insertLead('c').id];
    await until(() => r.received.length === 4);
    await t.sb.admin.webhooksIdle();
    const delivered = r.received.map((d) => JSON.parse(d.body).data.id);
    expect(delivered).toEqual([String(ids[0]), ...ids.map(String)]);
  });

  it('does not block the API response while a receiver hangs', async () => {
    const r = await track(receiver(() => 'hang'));
    t.sb.admin.addWebhook({ url: r.url });
    const lead = insertLead();
    await until(() => r.received.length === 1);
    const started = Date.now();
    const res = await t.request('PATCH', `/admin/records/lead/${lead.id}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      json: { attributes: { first_name: 'Quick' } },
    });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(250);
    const api = await t.request('GET', '/api/v1/services');
    expect(api.status).toBe(200);
  });

  it('refuses a chosen secret of fewer than 24 key bytes with a 422 naming secret', async () => {
    const headers = { 'x-admin-token': t.sb.adminToken };
    const secretOf = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString('base64')}`;
    for (const secret of [secretOf(16), secretOf(23), 'whsec_not*base64', 'not-whsec']) {
      const res = await t.request('POST', '/admin/webhooks', {
        key: null,
        headers,
        json: { url: 'http://127.0.0.1:9/hooks', secret },
      });
      expect(res.status, secret).toBe(422);
      expect(res.body, secret).toEqual({
        meta: { status: 'error' },
        errors: { secret: [expect.stringMatching(/^Secret must /)] },
      });
    }
    expect(
      (
        await t.request('POST', '/admin/webhooks', {
          key: null,
          headers,
          json: { url: 'http://127.0.0.1:9/hooks', secret: secretOf(16) },
        })
      ).body.errors.secret,
    ).toEqual(['Secret must carry at least 24 bytes of key (this one has 16)']);
    expect(() =>
      t.sb.admin.addWebhook({ url: 'http://127.0.0.1:9/x', secret: secretOf(16) }),
    ).toThrow(/validation failed/);
    expect(t.sb.admin.webhooks()).toEqual([]);

    // 24 bytes are enough, and deliveries are signed with exactly that secret.
    const r = await track(receiver());
    const created = await t.request('POST', '/admin/webhooks', {
      key: null,
      headers,
      json: { url: r.url, secret: secretOf(24) },
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toBe(secretOf(24));
    insertLead();
    await until(() => r.received.length === 1);
    expect(verify(secretOf(24), r.received[0] as Received).type).toBe('lead.created');
  });

  it('registers, lists and deletes endpoints over HTTP', async () => {
    const headers = { 'x-admin-token': t.sb.adminToken };
    const created = await t.request('POST', '/admin/webhooks', {
      key: null,
      headers,
      json: { url: 'http://127.0.0.1:9/hooks', types: ['lead', 'event'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(Number),
      url: 'http://127.0.0.1:9/hooks',
      types: ['lead', 'event'],
      secret: expect.stringMatching(/^whsec_/),
    });
    const list = await t.request('GET', '/admin/webhooks', { key: null, headers });
    expect(list.body.data.map((e: any) => e.id)).toContain(created.body.id);
    const bad = await t.request('POST', '/admin/webhooks', {
      key: null,
      headers,
      json: { url: 'ftp://x', types: ['service'] },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['types.0', 'url']);
    expect(
      (await t.request('DELETE', `/admin/webhooks/${created.body.id}`, { key: null, headers }))
        .status,
    ).toBe(200);
    expect(
      (await t.request('DELETE', `/admin/webhooks/${created.body.id}`, { key: null, headers }))
        .status,
    ).toBe(404);
  });

  // Last in the file: it moves this sandbox's clock for good.
  it('stamps occurred_at and deleted_at from the sandbox clock, so a moved clock moves them', async () => {
    const r = await track(receiver());
    t.sb.admin.addWebhook({ url: r.url, types: ['lead'] });
    const twoDays = 2 * 86_400_000;
    t.sb.admin.advanceClock(twoDays);
    const lead = insertLead('Clocked');
    t.sb.ctx.records.softDelete(lead, t.sb.ctx.clock.iso());
    await until(() => r.received.length === 2);
    const occurred = r.received.map((d) => Date.parse(JSON.parse(d.body).occurred_at as string));
    for (const at of occurred) expect(at).toBeGreaterThan(Date.now() + twoDays - 60_000);
    const row = t.sb.ctx.db
      .prepare("SELECT deleted_at FROM records WHERE type = 'lead' AND id = ?")
      .get(lead.id) as { deleted_at: string };
    expect(Date.parse(row.deleted_at)).toBeGreaterThan(Date.now() + twoDays - 60_000);
  });
});
