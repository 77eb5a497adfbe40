import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type RawResponse, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox();
});
afterEach(() => {
  t.sb.admin.setRateLimit({ perSecond: 0, mode: '429' });
  t.sb.admin.clearFaults();
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

/** Sends requests until one is limited; a fixed one-second window admits at most 2×limit. */
async function firstLimited(key: string, perSecond: number): Promise<RawResponse> {
  for (let i = 0; i < perSecond * 2 + 1; i += 1) {
    const res = await t.request('GET', '/api/v1/services', { key });
    if (res.status !== 200) return res;
  }
  throw new Error('never rate limited');
}

describe('rate limit', () => {
  it('answers 429 with an integer Retry-After in the general shape, per credential', async () => {
    const a = t.sb.identity.createKey({ userId: t.sb.userId }).key;
    const b = t.sb.identity.createKey({ userId: t.sb.userId }).key;
    t.sb.admin.setRateLimit({ perSecond: 2 });
    const before = t.sb.admin.counters().rate_limited;
    const limited = await firstLimited(a, 2);
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.body).toEqual({
      meta: { status: 'error' },
      status: 'too_many_requests',
      reason: 'rate_limit_exceeded',
      message: expect.any(String),
    });
    expect(t.sb.admin.counters().rate_limited).toBeGreaterThan(before);
    // Another key has its own window.
    expect((await t.request('GET', '/api/v1/services', { key: b })).status).toBe(200);
  });

  it('can answer the 403 variant with a rate-limit reason', async () => {
    const key = t.sb.identity.createKey({ userId: t.sb.userId }).key;
    t.sb.admin.setRateLimit({ perSecond: 1, mode: '403' });
    const limited = await firstLimited(key, 1);
    expect(limited.status).toBe(403);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited.body).toMatchObject({
      meta: { status: 'error' },
      status: 'forbidden',
      reason: 'rate_limit_exceeded',
    });
  });

  it('is switched through the admin API and off again', async () => {
    const headers = { 'x-admin-token': t.sb.adminToken };
    const key = t.sb.identity.createKey({ userId: t.sb.userId }).key;
    const set = await t.request('PATCH', '/admin/rate-limit', {
      key: null,
      headers,
      json: { per_second: 1, mode: 429 },
    });
    expect(set.body).toEqual({ per_second: 1, mode: '429' });
    expect((await firstLimited(key, 1)).status).toBe(429);
    await t.request('PATCH', '/admin/rate-limit', { key: null, headers, json: { per_second: 0 } });
    for (let i = 0; i < 5; i += 1) {
      expect((await t.request('GET', '/api/v1/services', { key })).status).toBe(200);
    }
  });
});

describe('injected faults', () => {
  it('answers 5xx in the general shape with errorRate 1, and 200 once switched off', async () => {
    t.sb.admin.setFaults({ errorRate: 1, errorStatuses: [502, 503] });
    const before = t.sb.admin.counters().faults_injected;
    for (let i = 0; i < 4; i += 1) {
      const res = await t.request('GET', '/api/v1/services');
      expect([502, 503]).toContain(res.status);
      expect(res.body).toEqual({
        meta: { status: 'error' },
        status: 'error',
        reason: 'injected_fault',
        message: expect.any(String),
      });
    }
    expect(t.sb.admin.counters().faults_injected).toBe(before + 4);
    t.sb.admin.setFaults({ errorRate: 0 });
    expect((await t.request('GET', '/api/v1/services')).status).toBe(200);
  });

  it('drops the connection with dropRate 1', async () => {
    t.sb.admin.setFaults({ dropRate: 1 });
    await expect(t.request('GET', '/api/v1/services')).rejects.toThrow(
      /socket hang up|ECONNRESET|other side closed/i,
    );
    t.sb.admin.setFaults({ dropRate: 0 });
    expect((await t.request('GET', '/api/v1/services')).status).toBe(200);
  });

  it('adds measurable latency', async () => {
    const headers = { 'x-admin-token': t.sb.adminToken };
    const set = await t.request('PATCH', '/admin/faults', {
      key: null,
      headers,
      json: { latency_ms: 300 },
    });
    expect(set.body.latency_ms).toBe(300);
    let started = Date.now();
    expect((await t.request('GET', '/api/v1/services')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    await t.request('DELETE', '/admin/faults', { key: null, headers });
    started = Date.now();
    expect((await t.request('GET', '/api/v1/services')).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(250);
  });

  it('rejects out-of-range fault settings with 422', async () => {
    const res = await t.request('PATCH', '/admin/faults', {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      json: { error_rate: 2, error_statuses: [418], drop_rate: 'x' },
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual([
      'drop_rate',
      'error_rate',
      'error_statuses.0',
    ]);
    expect(t.sb.admin.faults().error_rate).toBe(0);
  });
});
