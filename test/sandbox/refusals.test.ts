import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/**
 * Refusals found black-box: each must be one line that names what is wrong and what is
 * allowed, in the spec's error shapes.
 */
let t: TestSandbox;

beforeAll(async () => {
  t = await startTestSandbox({ seed: { leads: 20 } });
});

afterAll(async () => {
  await t.close();
});

describe('repeated query parameters', () => {
  // Each singular parameter the sandbox reads, on a route that reads it, with two values of
  // the form it takes: read one by one, some said "must be a positive integer" of two valid
  // ids, some quoted the array, some took the last value silently.
  const cases: [string, string, Record<string, string>, string][] = [
    ['/api/v1/questionnaires', 'event_id', {}, '1'],
    ['/api/v1/event_bookings', 'event_date_start', {}, '2026-01-01'],
    ['/api/v1/event_bookings', 'event_date_end', {}, '2026-01-01'],
    ['/api/v1/lead_bookings', 'event_date_start', {}, '2026-01-01'],
    ['/api/v1/lead_bookings', 'brand_id', {}, '1'],
    ['/api/v1/leads', 'email', {}, 'a@example.com'],
    ['/api/v1/leads', 'text', {}, 'ann'],
    ['/api/v1/leads', 'page', {}, '1'],
    ['/api/v1/appointments', 'per', {}, '5'],
    ['/api/v1/appointments', 'staff_id', {}, '1'],
    ['/api/v1/appointments', 'start_date', {}, '2026-01-01'],
    ['/api/v1/appointments', 'canceled_status', {}, 'all'],
    ['/api/v1/add_ons', 'order', {}, 'name'],
    ['/api/v1/add_ons', 'text', {}, 'booth'],
    ['/api/v1/packages', 'package_group_id', {}, '1'],
    ['/api/v1/design_template_categories', 'page', {}, '1'],
    ['/api/v1/availability/time_slots', 'event_date', { package_id: '1' }, '2027-06-01'],
    ['/api/v1/availability/time_slots', 'package_id', { event_date: '2027-06-01' }, '1'],
    ['/api/v1/availability', 'event_date', { package_id: '1' }, '2027-06-01'],
    [
      '/api/v1/availability/detailed',
      'starts_at_date',
      { starts_at_time: '2:00 PM' },
      '2027-06-01',
    ],
  ];

  it.each(cases)('%s refuses %s given twice, in one line', async (path, name, rest, value) => {
    const once = await t.request('GET', path, { query: { ...rest, [name]: value } });
    expect(once.status, `${path}?${name}=${value} once`).not.toBe(404);
    expect(once.body?.message ?? '').not.toMatch(/given once/);
    const res = await t.request('GET', path, { query: { ...rest, [name]: [value, value] } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      status: 'bad_request',
      reason: 'invalid_parameter',
      message: `${name} may be given only once; it was given 2 times`,
    });
  });

  it('still takes the parameters that are lists: include and category_ids[]', async () => {
    const include = await t.request('GET', '/api/v1/leads', {
      query: { include: ['lead_bookings', 'lead_bookings'], per: 1 },
    });
    expect(include.status).toBe(200);
    const ids = await t.request('GET', '/api/v1/add_ons', { query: { 'category_ids[]': [1, 2] } });
    expect(ids.status).toBe(200);
  });
});
