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

describe('integer fields', () => {
  // Checked one by one, an integer field with a lower bound refused -4 (or 0 for an id) as
  // 'must be an integer', which it is. Every one now says the bound it missed.
  it('names the bound an integer below it missed, and the bound of a non-integer', async () => {
    const expense = await t.request('POST', '/api/v1/expenses', {
      json: {
        payee_type: 'custom',
        payee_value: 'Venue',
        payment_date: '2027-06-01',
        amount: 5,
        ref_no: 'r-int',
        event_id: -1,
        expense_category_id: 2.5,
      },
    });
    expect(expense.status).toBe(422);
    expect(expense.body.errors).toEqual({
      event_id: ['Event must be greater than or equal to 1'],
      expense_category_id: ['Expense category must be an integer greater than or equal to 1'],
    });
    const appointment = await t.request('POST', '/api/v1/appointments', {
      json: {
        guest_name: 'Ann',
        guest_email: 'ann@example.com',
        starts_at_date: '2027-06-01',
        starts_at_time: '2:00 PM',
        length_in_minutes: 0.5,
        created_via: 'app',
        user_id: -3,
      },
    });
    expect(appointment.status).toBe(422);
    expect(appointment.body.errors).toEqual({
      length_in_minutes: ['Length in minutes must be an integer from 1 to 527040'],
      user_id: ['User must be greater than or equal to 1'],
    });
    const questionnaire = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: { event_id: 0, title: 'Form', external_url: 'forms.example.com/x' },
    });
    expect(questionnaire.status).toBe(422);
    expect(questionnaire.body.errors).toEqual({
      event_id: ['Event must be greater than or equal to 1'],
    });
    const lead = await t.request('POST', '/api/v1/leads', {
      json: { email: 'guests@example.com', estimated_number_guests: 2.5 },
    });
    expect(lead.status).toBe(422);
    expect(lead.body.errors).toEqual({
      estimated_number_guests: [
        'Estimated number guests must be an integer greater than or equal to 0',
      ],
    });
  });
});

describe('admin rate limit and clock', () => {
  const admin = (method: 'PATCH' | 'POST', path: string, json: unknown) =>
    t.request(method, `/admin${path}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      json,
    });

  it('names what each rate-limit field takes, and refuses a field it does not have', async () => {
    // Was 'Per second must be a int' (zod's own words), a mode refused without naming 429
    // or 403, and an unknown key (a typo such as perSecond) ignored: the limit stayed off.
    const cases: [unknown, Record<string, string[]>][] = [
      [
        { per_second: 1.5 },
        { per_second: ['Per second must be an integer greater than or equal to 0'] },
      ],
      [{ per_second: -1 }, { per_second: ['Per second must be greater than or equal to 0'] }],
      [
        { per_second: '5' },
        { per_second: ['Per second must be an integer greater than or equal to 0'] },
      ],
      [{ mode: '500' }, { mode: ['Mode must be 429 or 403'] }],
      [
        { perSecond: 5 },
        {
          perSecond: ['PerSecond is not a field of this request; the fields are per_second, mode'],
        },
      ],
    ];
    for (const [body, errors] of cases) {
      const res = await admin('PATCH', '/rate-limit', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body).toEqual({ meta: { status: 'error' }, errors });
    }
    const set = await admin('PATCH', '/rate-limit', { per_second: 0, mode: 403 });
    expect(set.status).toBe(200);
  });

  it('names both forms the clock step takes', async () => {
    const cases: [unknown, Record<string, string[]>][] = [
      [{}, { seconds: ["Seconds can't be blank: send seconds, or ms in milliseconds"] }],
      [{ seconds: 1, ms: 1000 }, { seconds: ['Seconds and ms: send one of them, not both'] }],
      [{ ms: 1.5 }, { ms: ['Ms must be an integer from 0 to 3155760000000'] }],
      [{ seconds: 'an hour' }, { seconds: ['Seconds is not a number'] }],
      [
        { minutes: 5 },
        // Both are true: minutes is not taken, and no step was sent.
        {
          minutes: ['Minutes is not a field of this request; the fields are ms, seconds'],
          seconds: ["Seconds can't be blank: send seconds, or ms in milliseconds"],
        },
      ],
    ];
    for (const [body, errors] of cases) {
      const res = await admin('POST', '/clock/advance', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body).toEqual({ meta: { status: 'error' }, errors });
    }
  });
});

describe('admin bodies with nested objects', () => {
  const admin = (method: 'GET' | 'POST', path: string, json?: unknown) =>
    t.request(method, `/admin${path}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      ...(json === undefined ? {} : { json }),
    });

  it('refuses an unknown key inside a nested object, naming where and what it takes', async () => {
    const before = (await admin('GET', '/businesses')).body as { data: unknown[] };
    const res = await admin('POST', '/businesses', {
      name: 'Nested Booths',
      owner: { name: 'Ann', email: 'ann@example.com', nickname: 'A' },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        'owner.nickname': ['Owner.nickname is not a field of owner; the fields are name, email'],
      },
    });
    // Nothing made.
    const after = (await admin('GET', '/businesses')).body as { data: unknown[] };
    expect(after.data).toHaveLength(before.data.length);
    const ok = await admin('POST', '/businesses', {
      name: 'Nested Booths',
      owner: { name: 'Ann', email: 'ann@example.com' },
    });
    expect(ok.status).toBe(201);
  });
});

describe('body content types', () => {
  // The spec: "All bodies are JSON (Content-Type: application/json)". A text/plain or form
  // body was parsed as JSON anyway, so a client that mislabelled its bodies passed here
  // and would fail against the service.
  const refusal = (type: string) => ({
    meta: { status: 'error' },
    status: 'unsupported_media_type',
    reason: 'content_type_unsupported',
    message: `The body is ${type}; send it as application/json`,
  });

  it('refuses a JSON body labelled text/plain or as a form, on the API and the admin API', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.request('POST', '/api/v1/leads', {
        headers: { 'content-type': type },
        text: JSON.stringify({ email: 'mislabelled@example.com' }),
      });
      expect(res.status, type).toBe(415);
      expect(res.body).toEqual(refusal(type));
    }
    const admin = await t.request('PATCH', '/admin/rate-limit', {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken, 'content-type': 'text/plain; charset=utf-8' },
      text: JSON.stringify({ per_second: 5 }),
    });
    expect(admin.status).toBe(415);
    expect(admin.body).toEqual(refusal('text/plain'));
    const leads = await t.request('GET', '/api/v1/leads', {
      query: { email: 'mislabelled@example.com' },
    });
    expect(leads.body.meta.total_count).toBe(0);
  });

  it('still takes an empty body under any type (legacy callers label every call)', async () => {
    const res = await t.request('PATCH', '/admin/rate-limit', {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken, 'content-type': 'text/plain' },
      text: '',
    });
    expect(res.status).toBe(200);
  });
});

describe('admin edits of lead bookings', () => {
  // PATCH /admin/records/lead_booking/:id checked only that a value was of the stored kind:
  // a length of -5 or 10^12, a package or staff id that names nothing, a garbage date, a
  // start in the year 9999 and a booking moved to a lead that does not exist were all
  // stored, and served, though the public write path refuses each.
  const patch = (id: string, attributes: Record<string, unknown>) =>
    t.request('PATCH', `/admin/records/lead_booking/${id}`, {
      key: null,
      headers: { 'x-admin-token': t.sb.adminToken },
      json: { attributes },
    });

  it('refuses what the public write path refuses, naming it, and writes nothing', async () => {
    const list = await t.request('GET', '/api/v1/lead_bookings', { query: { per: 1 } });
    const id = list.body.data[0].id as string;
    const before = await t.request('GET', `/api/v1/lead_bookings/${id}`);
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ length_in_minutes: -5 }, 'length_in_minutes', /greater than or equal to 1/],
      [{ length_in_minutes: 1e12 }, 'length_in_minutes', /less than or equal to 527040/],
      [{ length_in_days: 99_999 }, 'length_in_days', /less than or equal to 366/],
      [{ units: 1.5 }, 'units', /must be an integer/],
      [{ package_unit_range_id: -1 }, 'package_unit_range_id', /greater than or equal to 1/],
      [{ event_type_id: 999_999 }, 'event_type_id', /must exist/],
      [{ staff_id: -1 }, 'staff_id', /greater than or equal to 1/],
      [{ staff_id: 999_999 }, 'staff_id', /must exist/],
      [{ starts_at_date: 'garbage' }, 'starts_at_date', /YYYY-MM-DD, in the years 1900 to 2200/],
      [{ starts_at: '9999-12-31T10:00:00-05:00' }, 'starts_at', /years 1900 to 2200/],
      [{ starts_at_minutes: 99_999 }, 'starts_at_minutes', /less than or equal to 1439/],
      [{ lead_id: 999_999 }, 'lead_id', /must be a lead of this business/],
      [{ brand_id: 999_999 }, 'brand_id', /must be a brand of this business/],
      [{ photobooth_background_id: 999_999 }, 'photobooth_background_id', /must be a backdrop/],
    ];
    for (const [attributes, field, message] of cases) {
      const res = await patch(id, attributes);
      expect(res.status, JSON.stringify(attributes)).toBe(422);
      expect(Object.keys(res.body.errors), JSON.stringify(attributes)).toEqual([
        `attributes.${field}`,
      ]);
      expect(res.body.errors[`attributes.${field}`][0]).toMatch(message);
    }
    const after = await t.request('GET', `/api/v1/lead_bookings/${id}`);
    expect(after.body).toEqual(before.body);
    const fine = await patch(id, { length_in_minutes: 90, staff_id: null });
    expect(fine.status).toBe(200);
    expect(fine.body.attributes.length_in_minutes).toBe(90);
  });
});
