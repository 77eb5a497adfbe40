import { request as httpRequest } from 'node:http';
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

/**
 * A request whose headers are exactly these (plus Host and the key), and whose body is
 * `body`: got and fetch decide framing headers themselves.
 */
function bare(
  method: string,
  path: string,
  headers: Record<string, string>,
  body = '',
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.sb.url}${path}`,
      { method, headers: { 'api-key': t.sb.apiKey, ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function newCategory(): Promise<string> {
  const res = await t.request('POST', '/api/v1/add_on_categories', {
    json: { name: `Empty ${Math.random()}` },
  });
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

async function newAppointment(): Promise<string> {
  const res = await t.request('POST', '/api/v1/appointments', {
    json: {
      guest_name: 'Legacy Caller',
      guest_email: 'legacy@example.com',
      starts_at_date: '2030-06-13',
      starts_at_time: '2:00 PM',
      length_in_minutes: 30,
      created_via: 'app',
    },
  });
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

const JSON_TYPE = { 'content-type': 'application/json' };

describe('a bodyless request that says Content-Type: application/json', () => {
  it.for([
    ['no framing headers', {}],
    ['Content-Length: 0', { 'content-length': '0' }],
    ['an empty chunked body', { 'transfer-encoding': 'chunked' }],
  ] as const)('DELETE of an add-on category with %s is no body', async ([, framing]) => {
    const id = await newCategory();
    const res = await bare('DELETE', `/api/v1/add_on_categories/${id}`, {
      ...JSON_TYPE,
      ...framing,
    });
    expect(res).toEqual({ status: 200, body: { meta: { status: 'ok' } } });
    expect((await t.request('GET', `/api/v1/add_on_categories/${id}`)).status).toBe(404);
  });

  it.for([
    ['Content-Length: 0', { 'content-length': '0' }, ''],
    ['an empty chunked body', { 'transfer-encoding': 'chunked' }, ''],
    ['a body of blanks', {}, ' \r\n'],
  ] as const)('POST …/appointments/{id}/cancel with %s cancels', async ([, framing, body]) => {
    const id = await newAppointment();
    const res = await bare(
      'POST',
      `/api/v1/appointments/${id}/cancel`,
      { ...JSON_TYPE, ...framing },
      body,
    );
    expect(res.status).toBe(200);
    expect(res.body.data.attributes.canceled).toBe(true);
  });

  it('a create without a body is a 422 naming the missing field, not malformed JSON', async () => {
    const res = await bare('POST', '/api/v1/add_on_categories', {
      ...JSON_TYPE,
      'content-length': '0',
    });
    expect(res.status).toBe(422);
    expect(res.body.errors.name).toEqual(["Name can't be blank"]);
  });

  it('a body that is not JSON is still 400 malformed_json, and prototype keys still refused', async () => {
    const broken = await bare('POST', '/api/v1/add_on_categories', JSON_TYPE, '{"name":');
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ status: 'bad_request', reason: 'malformed_json' });
    const poisoned = await bare(
      'POST',
      '/api/v1/add_on_categories',
      JSON_TYPE,
      '{"name":"x","__proto__":{"admin":true}}',
    );
    expect(poisoned.status).toBe(400);
    expect(poisoned.body.meta).toEqual({ status: 'error' });
  });
});

describe('include= that finds nothing to attach', () => {
  it('answers included: [] on single reads', async () => {
    const category = await newCategory();
    const lead = await t.request('POST', '/api/v1/leads', {
      json: { first_name: 'No', last_name: 'Booking', email: 'nobooking@example.com' },
    });
    expect(lead.status).toBe(200);
    const reads: [string, string][] = [
      [`/api/v1/add_on_categories/${category}`, 'add_ons'],
      [`/api/v1/leads/${lead.body.data.id}`, 'lead_bookings'],
    ];
    for (const [path, include] of reads) {
      const plain = await t.request('GET', path);
      expect(plain.status, path).toBe(200);
      expect(plain.body, path).not.toHaveProperty('included');
      const res = await t.request('GET', path, { query: { include } });
      expect(res.status, path).toBe(200);
      expect(res.body.included, `${path}?include=${include}`).toEqual([]);
    }
  });

  it('answers included: [] on lists with nothing on the page', async () => {
    const lists: [string, string][] = [
      ['/api/v1/add_on_categories', 'add_ons'],
      ['/api/v1/leads', 'lead_bookings'],
      ['/api/v1/lead_bookings', 'lead_add_ons,lead_extras'],
      ['/api/v1/design_templates', 'design_template_category,design_category_tags'],
    ];
    for (const [path, include] of lists) {
      const plain = await t.request('GET', path, { query: { page: 9999 } });
      expect(plain.status, path).toBe(200);
      expect(plain.body.data, path).toEqual([]);
      expect(plain.body, path).not.toHaveProperty('included');
      const res = await t.request('GET', path, { query: { page: 9999, include } });
      expect(res.status, path).toBe(200);
      expect(res.body.included, `${path}?include=${include}`).toEqual([]);
    }
  });
});
