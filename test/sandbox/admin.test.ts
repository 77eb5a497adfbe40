import { calculatePKCECodeChallenge, generateRandomCodeVerifier } from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type RawResponse, type TestSandbox } from '../helpers/sandbox.js';
import type { RequestOptions } from '../helpers/sandbox.js';

const TOKEN = 'adm_fixed_for_sandbox_tests';
let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox({ adminToken: TOKEN });
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
function admin(method: Method, path: string, options: RequestOptions = {}): Promise<RawResponse> {
  return t.request(method, `/admin${path}`, {
    key: null,
    ...options,
    headers: { 'x-admin-token': TOKEN, ...options.headers },
  });
}

const generalShape = {
  meta: { status: 'error' },
  status: expect.any(String),
  reason: expect.any(String),
  message: expect.any(String),
};

describe('admin API access', () => {
  it('requires the x-admin-token header (401 in the general shape)', async () => {
    const missing = await t.request('GET', '/admin/counters', { key: null });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ ...generalShape, reason: 'admin_token_missing' });
    const wrong = await t.request('GET', '/admin/counters', {
      key: null,
      headers: { 'x-admin-token': 'adm_wrong' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.reason).toBe('admin_token_invalid');
    // An API key is no admin credential.
    expect((await t.request('GET', '/admin/counters')).status).toBe(401);
    expect((await admin('GET', '/counters')).status).toBe(200);
  });

  it('uses a random token per instance unless one is given', async () => {
    const other = await startTestSandbox();
    try {
      expect(other.sb.adminToken).toMatch(/^adm_/);
      expect(other.sb.adminToken).not.toBe(TOKEN);
    } finally {
      await other.close();
    }
  });

  it('answers malformed JSON with 400 and a non-object body with 400', async () => {
    const bad = await admin('POST', '/businesses', {
      headers: { 'content-type': 'application/json' },
      text: '{bad',
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ...generalShape, reason: 'malformed_json' });
    const array = await admin('POST', '/businesses', { json: [1, 2] });
    expect(array.status).toBe(400);
    expect(array.body.reason).toBe('invalid_body');
  });
});

describe('businesses, users and keys', () => {
  it('creates a business with an owner, lists it, suspends it', async () => {
    const res = await admin('POST', '/businesses', {
      json: { name: 'DJ Co', time_zone: 'Europe/Berlin', currency: 'EUR' },
    });
    expect(res.status).toBe(201);
    expect(res.body.business).toMatchObject({
      id: expect.any(Number),
      name: 'DJ Co',
      time_zone: 'Europe/Berlin',
      currency: 'EUR',
      suspended: false,
    });
    expect(res.body.owner).toMatchObject({ role: 'admin', business_id: res.body.business.id });
    const list = await admin('GET', '/businesses');
    expect(list.body.data.map((b: any) => b.id)).toContain(res.body.business.id);

    const key = await admin('POST', '/keys', { json: { user_id: res.body.owner.id } });
    expect((await t.request('GET', '/api/v1/services', { key: key.body.key })).status).toBe(200);
    const suspended = await admin('PATCH', `/businesses/${res.body.business.id}`, {
      json: { suspended: true },
    });
    expect(suspended.body.suspended).toBe(true);
    const denied = await t.request('GET', '/api/v1/services', { key: key.body.key });
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('account_suspended');
  });

  it('validates a business with per-field messages', async () => {
    const res = await admin('POST', '/businesses', {
      json: { time_zone: 'Mars/Olympus', currency: 'dollars' },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        name: ["Name can't be blank"],
        time_zone: ['Time zone must be an IANA time zone'],
        currency: ['Currency must be a three-letter currency code'],
      },
    });
  });

  it('creates users with a role and permissions; 404 for an unknown business', async () => {
    const res = await admin('POST', '/users', {
      json: {
        name: 'Sam Staff',
        email: 'sam@sandbox.example',
        role: 'staff',
        permissions: ['lead_read'],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      business_id: t.sb.businessId,
      role: 'staff',
      permissions: ['lead_read'],
    });
    const users = await admin('GET', '/users', { query: { business_id: t.sb.businessId } });
    expect(users.body.data.map((u: any) => u.id)).toContain(res.body.id);
    const unknown = await admin('POST', '/users', {
      json: { business_id: 999_999, name: 'X', email: 'x@example.com' },
    });
    expect(unknown.status).toBe(404);
    const badPermission = await admin('POST', '/users', {
      json: { name: 'X', email: 'nope', permissions: ['root'] },
    });
    expect(badPermission.status).toBe(422);
    expect(Object.keys(badPermission.body.errors).sort()).toEqual(['email', 'permissions.0']);
  });

  it('creates keys with chosen permissions, lists them with last_used_at, revokes them', async () => {
    const created = await admin('POST', '/keys', {
      json: { name: 'Zap', permissions: ['lead_read'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^ik_/);
    const denied = await t.request('GET', '/api/v1/services', { key: created.body.key });
    expect(denied.status).toBe(403);
    const list = await admin('GET', '/keys');
    const listed = list.body.data.find((k: any) => k.id === created.body.id);
    expect(listed).toMatchObject({ name: 'Zap', permissions: ['lead_read'] });
    expect(listed.last_used_at).toEqual(expect.any(String));
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);

    expect((await admin('DELETE', `/keys/${created.body.id}`)).status).toBe(200);
    const revoked = await t.request('GET', '/api/v1/services', { key: created.body.key });
    expect(revoked.body.reason).toBe('api_key_revoked');
    expect((await admin('DELETE', '/keys/999999')).status).toBe(404);
    expect((await admin('DELETE', '/keys/abc')).status).toBe(400);
  });

  it('refuses a key wider than its user', async () => {
    const user = await admin('POST', '/users', {
      json: { name: 'Narrow', email: 'n@sandbox.example', permissions: ['lead_read'] },
    });
    const res = await admin('POST', '/keys', {
      json: { user_id: user.body.id, permissions: ['lead_read', 'expense_read'] },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors.permissions[0]).toMatch(/^Permissions exceed/);
  });
});

describe('OAuth apps and grants', () => {
  it('creates an app, installs it without the browser, disconnects the grant', async () => {
    const app = await admin('POST', '/apps', {
      json: {
        name: 'Templates',
        redirect_uris: ['https://app.example/cb'],
        permissions: ['offerings_read'],
      },
    });
    expect(app.status).toBe(201);
    expect(app.body).toMatchObject({
      id: expect.any(Number),
      client_id: expect.any(String),
      legacy_app_id: expect.any(String),
      legacy_app_secret: expect.any(String),
      redirect_uris: ['https://app.example/cb'],
      permissions: ['offerings_read'],
    });
    const apps = await admin('GET', '/apps');
    const listed = apps.body.data.find((a: any) => a.id === app.body.id);
    expect(listed.legacy_app_secret).toBeUndefined();

    const installed = await admin('POST', `/apps/${app.body.id}/install`, { json: {} });
    expect(installed.status).toBe(201);
    expect(installed.body).toMatchObject({
      grant_id: expect.any(Number),
      business_id: t.sb.businessId,
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'offerings_read',
    });
    const bearer = installed.body.access_token;
    expect((await t.request('GET', '/api/v1/services', { bearer })).status).toBe(200);

    const grants = await admin('GET', '/grants', { query: { app_id: app.body.id } });
    expect(grants.body.data.map((g: any) => g.id)).toEqual([installed.body.grant_id]);
    const gone = await admin('DELETE', `/grants/${installed.body.grant_id}`);
    expect(gone.body).toMatchObject({ revoked_reason: 'disconnected' });
    const after = await t.request('GET', '/api/v1/services', { bearer });
    expect(after.status).toBe(401);
    expect(after.body.reason).toBe('app_disconnected');
    expect((await admin('DELETE', '/grants/999999')).status).toBe(404);
    expect((await admin('POST', '/apps/999999/install', { json: {} })).status).toBe(404);
  });

  it('uninstalls every grant of an app for a business', async () => {
    const app = t.sb.admin.createApp({
      name: 'Twice',
      redirectUris: ['https://x.example/cb'],
      permissions: ['offerings_read'],
    });
    const one = t.sb.admin.install({ appId: app.id });
    const two = t.sb.admin.install({ appId: app.id });
    const res = await admin('POST', `/apps/${app.id}/uninstall`, {
      json: { business_id: t.sb.businessId },
    });
    expect(res.body.data).toHaveLength(2);
    for (const tokens of [one, two]) {
      const r = await t.request('GET', '/api/v1/services', { bearer: tokens.access_token });
      expect(r.status).toBe(401);
    }
  });

  it('validates apps', async () => {
    const res = await admin('POST', '/apps', {
      json: { name: '', redirect_uris: ['not a url'], permissions: [] },
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual(['name', 'permissions', 'redirect_uris.0']);
  });

  it('switches auto-approve and the installing user at run time', async () => {
    const { owner, business } = t.sb.admin.createBusiness({ name: 'Installer Inc' });
    const set = await admin('PATCH', '/oauth', {
      json: { auto_approve: true, installing_user_id: owner.id },
    });
    expect(set.body).toEqual({ auto_approve: true, installing_user_id: owner.id });
    const app = t.sb.admin.createApp({
      name: 'Auto',
      redirectUris: ['http://127.0.0.1:9/cb'],
      permissions: ['offerings_read'],
    });
    const verifier = generateRandomCodeVerifier();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      code_challenge: await calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 's',
    });
    const res = await fetch(`${t.sb.authUrl}/oauth/authorize?${query.toString()}`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location') ?? '').searchParams.get('code')).toBeTruthy();
    expect(t.sb.admin.grants({ appId: app.id }).map((g) => g.business_id)).toEqual([business.id]);
    await admin('PATCH', '/oauth', { json: { auto_approve: false, installing_user_id: null } });
    expect((await admin('GET', '/oauth')).body).toEqual({
      auto_approve: false,
      installing_user_id: null,
    });
    expect((await admin('PATCH', '/oauth', { json: { installing_user_id: 999999 } })).status).toBe(
      404,
    );
  });
});

describe('records', () => {
  it('reads, patches and soft-deletes a record through the record store', async () => {
    const lead = t.sb.ctx.records.insert('lead', t.sb.businessId, (id) => ({
      id,
      first_name: 'Ada',
      email: 'ada@example.com',
    }));
    const changes: string[] = [];
    const stop = t.sb.ctx.records.onChange((c) => changes.push(`${c.type}.${c.action}`));
    try {
      const read = await admin('GET', `/records/lead/${lead.id}`);
      expect(read.body).toMatchObject({
        type: 'lead',
        id: lead.id,
        business_id: t.sb.businessId,
        attributes: { first_name: 'Ada' },
        deleted_at: null,
      });
      const patched = await admin('PATCH', `/records/lead/${lead.id}`, {
        json: { attributes: { first_name: 'Grace' } },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.attributes).toEqual({
        id: lead.id,
        first_name: 'Grace',
        email: 'ada@example.com',
      });
      expect(t.sb.ctx.records.get('lead', t.sb.businessId, lead.id)?.attrs.first_name).toBe(
        'Grace',
      );
      expect((await admin('DELETE', `/records/lead/${lead.id}`)).status).toBe(200);
      expect(t.sb.ctx.records.get('lead', t.sb.businessId, lead.id)).toBeUndefined();
      expect((await admin('GET', `/records/lead/${lead.id}`)).body.deleted_at).toEqual(
        expect.any(String),
      );
      expect(changes).toEqual(['lead.updated', 'lead.deleted']);
    } finally {
      stop();
    }
  });

  it("sets an event's title with its custom title, as the service's override does", async () => {
    const event = t.sb.ctx.records.insert('event', t.sb.businessId, (id) => ({
      id,
      title: 'Ada Lovelace - Classic Booth',
      custom_title: null,
    }));
    const patched = await admin('PATCH', `/records/event/${event.id}`, {
      json: { attributes: { custom_title: 'Edited Seven' } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.attributes).toMatchObject({
      title: 'Edited Seven',
      custom_title: 'Edited Seven',
    });
    // A title given with it is the one kept.
    const both = await admin('PATCH', `/records/event/${event.id}`, {
      json: { attributes: { custom_title: 'Other', title: 'Given' } },
    });
    expect(both.body.attributes).toMatchObject({ title: 'Given', custom_title: 'Other' });
  });

  it('answers 404 for unknown records, 422 for a bad patch, 400 for a bad id', async () => {
    expect(
      (await admin('PATCH', '/records/lead/999999', { json: { attributes: {} } })).status,
    ).toBe(404);
    const lead = t.sb.ctx.records.insert('lead', t.sb.businessId, (id) => ({ id }));
    // A type it does not hold (`leads` for `lead`) is said as such, not as a missing record.
    const plural = await admin('DELETE', `/records/leads/${lead.id}`);
    expect(plural.status).toBe(404);
    expect(plural.body.reason).toBe('record_type_not_found');
    expect(plural.body.message).toMatch(
      /^this sandbox holds no records of type 'leads'; its types: .*\blead\b/,
    );
    const res = await admin('PATCH', `/records/lead/${lead.id}`, { json: { attributes: 'x' } });
    expect(res.status).toBe(422);
    expect(res.body.errors.attributes).toEqual(['Attributes must be a record']);
    const idChange = await admin('PATCH', `/records/lead/${lead.id}`, {
      json: { attributes: { id: 5 } },
    });
    expect(idChange.status).toBe(422);
    expect(idChange.body.errors).toEqual({ 'attributes.id': ['id cannot be changed'] });
    expect((await admin('GET', '/records/lead/-1')).status).toBe(400);
    // ?hard= other than true or false was read as false: 'hard=yes' soft-deleted, silently.
    for (const hard of ['yes', 'TRUE', 'maybe']) {
      const res = await admin('DELETE', `/records/lead/${lead.id}`, { query: { hard } });
      expect(res.status, hard).toBe(400);
      expect(res.body).toMatchObject({
        reason: 'invalid_parameter',
        message: `hard must be true or false, got '${hard}'`,
      });
      expect(t.sb.ctx.records.get('lead', t.sb.businessId, lead.id), hard).toBeDefined();
    }
    expect((await admin('GET', '/records/Lead!/1')).status).toBe(400);
  });

  it('refuses a patch the service could not serve: unknown attribute, other kind, off-spec value', async () => {
    const lead = t.sb.ctx.records.insert('lead', t.sb.businessId, (id) => ({
      id,
      email: 'kept@example.com',
      notes: null,
      times_contacted: 2,
    }));
    const changes: string[] = [];
    const stop = t.sb.ctx.records.onChange((c) => changes.push(`${c.type}.${c.action}`));
    try {
      const res = await admin('PATCH', `/records/lead/${lead.id}`, {
        json: {
          attributes: { emial: 'x@example.com', email: 123, times_contacted: 1.5, notes: 'ok' },
        },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        meta: { status: 'error' },
        errors: {
          'attributes.emial': ['emial is not an attribute of this lead'],
          'attributes.email': ['email must be a string, as stored'],
          'attributes.times_contacted': [
            "times_contacted is refused by the spec's lead.times_contacted",
          ],
        },
      });
      // Nothing of a refused patch is written, not even its good part.
      expect(t.sb.ctx.records.get('lead', t.sb.businessId, lead.id)?.attrs).toEqual(lead.attrs);
      expect(changes).toEqual([]);

      // Clearing a value and filling an empty one are staff edits.
      const ok = await admin('PATCH', `/records/lead/${lead.id}`, {
        json: { attributes: { notes: 'called back', email: null } },
      });
      expect(ok.status).toBe(200);
      expect(changes).toEqual(['lead.updated']);
    } finally {
      stop();
    }
  });

  it('refuses a timestamp that is no timestamp, so the record still reads', async () => {
    // An appointment's starts_at has no stricter schema than a string (the spec shows no
    // appointment attributes), so 'garbage' was stored, and every later read of the
    // appointment, and every page of the list holding it, answered 500.
    const made = await t.request('POST', '/api/v1/appointments', {
      json: {
        guest_name: 'Kept Time',
        guest_email: 'kept-time@example.com',
        starts_at_date: '2027-03-01',
        starts_at_time: '10:00 AM',
        length_in_minutes: 30,
        created_via: 'app',
      },
    });
    expect(made.status).toBe(200);
    const id = made.body.data.id as string;
    for (const value of ['garbage', '2027-03-01', '2027-02-30T10:00:00-05:00', '']) {
      const res = await admin('PATCH', `/records/appointment/${id}`, {
        json: { attributes: { starts_at: value } },
      });
      expect(res.status, value).toBe(422);
      expect(res.body.errors).toEqual({
        'attributes.starts_at': [
          'starts_at must be an ISO 8601 timestamp with a UTC offset, in the years 1900 to 2200, as stored',
        ],
      });
    }
    const moved = await admin('PATCH', `/records/appointment/${id}`, {
      json: { attributes: { starts_at: '2027-03-01T11:00:00-05:00' } },
    });
    expect(moved.status).toBe(200);
    const read = await t.request('GET', `/api/v1/appointments/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.data.attributes.starts_at).toBe('2027-03-01T11:00:00-05:00');
    expect((await t.request('GET', '/api/v1/appointments')).status).toBe(200);
    expect(t.internalErrors).toEqual([]);
  });

  it('takes back every attribute of the records it generated, unchanged', async () => {
    const seeded = await startTestSandbox({ seed: { leads: 30, seed: 'patch-back' } });
    try {
      const types = ['lead', 'lead_booking', 'event', 'event_booking', 'appointment'];
      for (const type of types) {
        const row = seeded.sb.ctx.db
          .prepare('SELECT id FROM records WHERE type = ? AND deleted_at IS NULL LIMIT 1')
          .get(type) as { id: number } | undefined;
        expect(row, type).toBeDefined();
        const path = `/admin/records/${type}/${row?.id}`;
        const headers = { 'x-admin-token': seeded.sb.adminToken };
        const read = await seeded.request('GET', path, { key: null, headers });
        const back = await seeded.request('PATCH', path, {
          key: null,
          headers,
          json: { attributes: read.body.attributes },
        });
        expect({ type, status: back.status, body: back.status === 200 ? null : back.body }).toEqual(
          {
            type,
            status: 200,
            body: null,
          },
        );
      }
      expect(seeded.internalErrors).toEqual([]);
    } finally {
      await seeded.close();
    }
  });
});

describe('traffic switches, counters and clock', () => {
  it('sets and clears faults', async () => {
    const set = await admin('PATCH', '/faults', {
      json: { error_rate: 1, error_statuses: [503] },
    });
    expect(set.body).toEqual({ error_rate: 1, error_statuses: [503], latency_ms: 0, drop_rate: 0 });
    expect((await t.request('GET', '/api/v1/services')).status).toBe(503);
    expect((await admin('GET', '/faults')).body.error_rate).toBe(1);
    await admin('DELETE', '/faults');
    expect((await t.request('GET', '/api/v1/services')).status).toBe(200);
  });

  it('sets the rate limit', async () => {
    const res = await admin('PATCH', '/rate-limit', { json: { per_second: 7, mode: '403' } });
    expect(res.body).toEqual({ per_second: 7, mode: '403' });
    expect(t.sb.ctx.rateLimiter.settings).toEqual({ perSecond: 7, mode: '403' });
    expect((await admin('PATCH', '/rate-limit', { json: { mode: '500' } })).status).toBe(422);
    await admin('PATCH', '/rate-limit', { json: { per_second: 0, mode: '429' } });
  });

  it('reads and resets counters', async () => {
    await t.request('GET', '/api/v1/services');
    const read = await admin('GET', '/counters');
    expect(read.body.requests['offerings.services']['200']).toBeGreaterThan(0);
    const reset = await admin('DELETE', '/counters');
    expect(reset.body.rate_limited).toBe(0);
    expect(reset.body.requests).toEqual({});
  });

  it('advances the clock', async () => {
    const before = Date.parse((await admin('GET', '/clock')).body.now);
    const res = await admin('POST', '/clock/advance', { json: { seconds: 7200 } });
    expect(Date.parse(res.body.now) - before).toBeGreaterThanOrEqual(7200 * 1000);
    expect((await admin('POST', '/clock/advance', { json: {} })).status).toBe(422);
    expect((await admin('POST', '/clock/advance', { json: { ms: -5 } })).status).toBe(422);
    // Past what a four-digit year holds: refused in the field-error shape, and no harm done.
    const far = await admin('POST', '/clock/advance', { json: { seconds: 1e15 } });
    expect(far.status).toBe(422);
    expect(far.body.errors.ms ?? far.body.errors.seconds).toBeDefined();
    expect((await admin('GET', '/clock')).status).toBe(200);
    expect((await t.request('GET', '/api/v1/leads?per=1')).status).toBe(200);
  });

  it('keeps its clock before 9999-01-01 however many steps it is moved', async () => {
    const other = await startTestSandbox();
    const headers = { 'x-admin-token': other.sb.adminToken };
    try {
      let last = 200;
      let steps = 0;
      const century = { ms: 100 * 365.25 * 24 * 3600 * 1000 };
      for (; last === 200 && steps < 200; steps++) {
        last = (
          await other.request('POST', '/admin/clock/advance', { key: null, headers, json: century })
        ).status;
      }
      expect(last).toBe(422);
      expect(steps).toBeGreaterThan(70);
      const now = await other.request('GET', '/admin/clock', { key: null, headers });
      expect(now.status).toBe(200);
      expect(now.body.now).toMatch(/^9\d{3}-/);
    } finally {
      await other.close();
    }
  });

  it('answers unknown admin paths with 404 in the general shape', async () => {
    const res = await admin('GET', '/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject(generalShape);
  });
});
