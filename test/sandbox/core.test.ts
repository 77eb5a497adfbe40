import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox();
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

describe('sandbox core', () => {
  it('answers 401 api_key_missing in the general error shape when no credential is sent', async () => {
    const res = await t.request('GET', '/api/v1/services', { key: null });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      status: 'unauthorized',
      reason: 'api_key_missing',
      message: expect.any(String),
    });
  });

  it('rejects an unknown key with 401 and a revoked one with api_key_revoked', async () => {
    expect(
      (await t.request('GET', '/api/v1/services', { key: 'ik_nope_nope_nope' })).body.reason,
    ).toBe('api_key_invalid');
    const { id, key } = t.sb.identity.createKey({ userId: t.sb.userId });
    expect((await t.request('GET', '/api/v1/services', { key })).status).toBe(200);
    t.sb.identity.revokeKey(id);
    const res = await t.request('GET', '/api/v1/services', { key });
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('api_key_revoked');
  });

  it('answers 403 when the key lacks the permission, even if its user has it', async () => {
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    const res = await t.request('GET', '/api/v1/services', { key });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      meta: { status: 'error' },
      status: 'forbidden',
      reason: 'permission_denied',
    });
  });

  it('lists the catalog with list meta, string data.id and integer attributes.id', async () => {
    const res = await t.request('GET', '/api/v1/packages', { query: { per: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ status: 'ok', per_page: 2, page: 1 });
    expect(res.body.meta.total_count).toBeGreaterThan(2);
    const first = res.body.data[0];
    expect(typeof first.id).toBe('string');
    expect(first.attributes.id).toBe(Number(first.id));
    expect(first.attributes).toMatchObject({
      price_cents: expect.any(Number),
      price_currency: 'USD',
    });
    expect(first.attributes.price_formatted).toMatch(/^\$/);
  });

  it('answers unknown routes and malformed paging in the general error shape, never 500', async () => {
    expect((await t.request('GET', '/api/v1/nope')).body).toMatchObject({
      meta: { status: 'error' },
      reason: 'route_not_found',
    });
    const res = await t.request('GET', '/api/v1/packages', { query: { page: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body.reason).toBe('invalid_parameter');
  });

  it('answers a path id that is not a positive integer 400 invalid_parameter, 0 as -1; an unknown one 404', async () => {
    for (const path of ['events', 'leads', 'appointments']) {
      for (const id of ['0', '00', '-1', 'abc']) {
        const res = await t.request('GET', `/api/v1/${path}/${id}`);
        expect(res.status, `${path}/${id}`).toBe(400);
        expect(res.body).toMatchObject({
          meta: { status: 'error' },
          status: 'bad_request',
          reason: 'invalid_parameter',
        });
        expect(res.body.message).toMatch(/must be a positive integer, got '/);
      }
      const unknown = await t.request('GET', `/api/v1/${path}/987654321`);
      expect(unknown.status, `${path}/987654321`).toBe(404);
      expect(unknown.body.reason).toBe('record_not_found');
    }
  });
});

describe('sandbox over HTTPS', () => {
  it('serves HTTPS with a certificate the client can trust from caFile', async () => {
    const s = await startTestSandbox({ https: true });
    try {
      expect(s.sb.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const res = await s.request('GET', '/api/v1/services');
      expect(res.status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('answers plain HTTP on its port with a 400 saying the port speaks HTTPS', async () => {
    // Node's TLS server dropped it: the caller saw only an empty reply and had to guess.
    const s = await startTestSandbox({ https: true });
    try {
      const plain = await fetch(s.sb.url.replace(/^https:/, 'http:') + '/api/v1/services');
      expect(plain.status).toBe(400);
      expect(plain.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await plain.text()).toBe(
        `This port speaks HTTPS: send the request to ${s.sb.url}/api/v1/services\n`,
      );
      // HTTPS on the same port still works, kept alive across requests.
      for (let i = 0; i < 2; i++) {
        expect((await s.request('GET', '/api/v1/services')).status).toBe(200);
      }
    } finally {
      await s.close();
    }
  });
});
