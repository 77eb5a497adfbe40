import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/**
 * Lengths and money without an upper bound: a length is added to a start to make `ends_at`,
 * and an amount becomes `_cents`. Unbounded, a large one gave an end no ISO 8601 timestamp
 * holds (year 21039), money as '1e+300' with `_cents` 1e302, or a 500 thrown while the
 * answer was formatted, after the record was stored, so every later list holding it
 * failed too. Each must be a 422 (a 400 in a query) naming the field, and nothing stored.
 */
let t: TestSandbox;
const HUGE = 9_999_999_999;

beforeAll(async () => {
  t = await startTestSandbox({ seed: { leads: 20 } });
});

afterAll(async () => {
  await t.close();
});

const appointment = (length: number) => ({
  guest_name: 'Long Meeting',
  guest_email: 'long@example.com',
  starts_at_date: '2027-06-01',
  starts_at_time: '2:00 PM',
  length_in_minutes: length,
  created_via: 'app',
});

const event = (entry: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  contact_type: 'None',
  ...extra,
  quick_event_bookings_attributes: {
    0: { starts_at_date: '06-01-2027', starts_at_time: '2:00 PM', ...entry },
  },
});

describe('lengths', () => {
  it('refuses an appointment longer than a year, stores nothing, and the list still reads', async () => {
    const before = await t.request('GET', '/api/v1/appointments', { query: { per: 1 } });
    const res = await t.request('POST', '/api/v1/appointments', { json: appointment(HUGE) });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors)).toEqual(['length_in_minutes']);
    expect(res.body.errors.length_in_minutes[0]).toMatch(/less than or equal to 527040/);
    const after = await t.request('GET', '/api/v1/appointments', { query: { per: 100 } });
    expect(after.status).toBe(200);
    expect(after.body.meta.total_count).toBe(before.body.meta.total_count);
    // A year is taken, and its end is a timestamp.
    const year = await t.request('POST', '/api/v1/appointments', { json: appointment(527_040) });
    expect(year.status).toBe(200);
    expect(year.body.data.attributes.ends_at).toMatch(/^2028-06-01T14:00:00[-+]\d\d:\d\d$/);
    const id = year.body.data.id as string;
    const patched = await t.request('PATCH', `/api/v1/appointments/${id}`, {
      json: { length_in_minutes: HUGE },
    });
    expect(patched.status).toBe(422);
    expect(Object.keys(patched.body.errors)).toEqual(['length_in_minutes']);
  });

  it('refuses an event booking longer than a year, in minutes or in days', async () => {
    const minutes = await t.request('POST', '/api/v1/events', {
      json: event({ event_type_id: 2, length_in_minutes: HUGE }),
    });
    expect(minutes.status).toBe(422);
    expect(Object.keys(minutes.body.errors)).toEqual([
      'quick_event_bookings_attributes.0.length_in_minutes',
    ]);
    const days = await t.request('POST', '/api/v1/events', {
      json: event({ event_type_id: 6, length_in_days: 99_999_999 }),
    });
    expect(days.status).toBe(422);
    expect(Object.keys(days.body.errors)).toEqual([
      'quick_event_bookings_attributes.0.length_in_days',
    ]);
  });

  it('refuses a lead or lead booking longer than a year', async () => {
    const lead = await t.request('POST', '/api/v1/leads', {
      json: {
        email: 'long-lead@example.com',
        event_date: '2027-06-01',
        event_time: '2:00 PM',
        length_in_minutes: HUGE,
      },
    });
    expect(lead.status).toBe(422);
    expect(Object.keys(lead.body.errors)).toEqual(['length_in_minutes']);
    const bookings = await t.request('GET', '/api/v1/lead_bookings', { query: { per: 1 } });
    const bookingId = bookings.body.data[0].id as string;
    for (const field of ['length_in_minutes', 'length_in_days']) {
      const res = await t.request('PATCH', `/api/v1/lead_bookings/${bookingId}`, {
        json: { [field]: HUGE },
      });
      expect(res.status, field).toBe(422);
      expect(Object.keys(res.body.errors)).toEqual([field]);
    }
  });

  it('refuses time slots longer than a year as a malformed parameter', async () => {
    const res = await t.request('GET', '/api/v1/availability/time_slots', {
      query: { event_date: '2027-06-01', package_id: 1, length_in_minutes: HUGE },
    });
    expect(res.status).toBe(400);
    expect(res.body.reason).toBe('invalid_parameter');
    expect(res.body.message).toMatch(/length_in_minutes must be .*527040/);
  });
});

describe('dates', () => {
  it('refuses a date past the years it takes, naming them, in either form', async () => {
    const late = await t.request('POST', '/api/v1/appointments', {
      json: { ...appointment(60), starts_at_date: '2201-01-01' },
    });
    expect(late.status).toBe(422);
    // Well formed, so the refusal names the years, not only the form it already has.
    expect(late.body.errors.starts_at_date).toEqual([
      'Starts at date must be a date as YYYY-MM-DD, in the years 1900 to 2200',
    ]);
    const early = await t.request('POST', '/api/v1/events', {
      json: event({ starts_at_date: '12-31-1899', length_in_minutes: 60 }),
    });
    expect(early.status).toBe(422);
    expect(JSON.stringify(early.body.errors)).toContain(
      'a date as MM-DD-YYYY, in the years 1900 to 2200',
    );
  });
});

describe('add-on quantities', () => {
  it('refuses a quantity, or a sum of quantities on one line, past 10,000', async () => {
    // Adding the same add-on again adds to its quantity: unbounded, three adds of 2^53 - 1
    // stored 27021697764222972, a number JSON readers cannot hold exactly.
    const bookings = await t.request('GET', '/api/v1/lead_bookings', { query: { per: 1 } });
    const path = `/api/v1/lead_bookings/${bookings.body.data[0].id}/lead_add_ons`;
    const addOns = await t.request('GET', '/api/v1/add_ons');
    const addOnId = Number(addOns.body.data[0].id);
    const huge = await t.request('POST', path, {
      json: { add_on_id: addOnId, quantity: Number.MAX_SAFE_INTEGER },
    });
    expect(huge.status).toBe(422);
    expect(huge.body.errors).toEqual({
      quantity: ['Quantity must be less than or equal to 10000'],
    });
    const most = await t.request('POST', path, { json: { add_on_id: addOnId, quantity: 9_999 } });
    expect(most.status).toBe(200);
    const line = most.body.data.attributes.quantity as number;
    expect(line).toBeGreaterThanOrEqual(9_999);
    const over = await t.request('POST', path, { json: { add_on_id: addOnId, quantity: 10_000 } });
    expect(over.status).toBe(422);
    expect(over.body.errors.quantity[0]).toMatch(/at most 10000 on one line/);
  });
});

describe('paging parameters', () => {
  // Other list parameters given twice were a 400 (`email must be given once`), while a repeated
  // page or per silently took the last (refusals.test.ts checks every singular parameter); '0x10' and '1e2' were read as 16 and 100 while '1.5'
  // was refused; a page past 2^53 came back in meta as another number than was asked.
  const lists = ['/api/v1/leads', '/api/v1/appointments', '/api/v1/lead_bookings'];

  it('refuses page or per given twice, on every list', async () => {
    for (const path of lists) {
      for (const name of ['page', 'per']) {
        const res = await t.request('GET', path, { query: { [name]: [1, 2] } });
        expect(res.status, `${path} ${name}`).toBe(400);
        expect(res.body.reason).toBe('invalid_parameter');
        expect(res.body.message).toBe(`${name} may be given only once; it was given 2 times`);
      }
    }
  });

  it('reads decimal digits only', async () => {
    for (const value of ['0x10', '1e2', '+5', ' 5', '5 ', '٥']) {
      for (const name of ['page', 'per']) {
        const res = await t.request('GET', '/api/v1/leads', { query: { [name]: value } });
        expect(res.status, `${name}=${value}`).toBe(400);
        expect(res.body.message).toMatch(new RegExp(`^${name} must be a positive integer`));
      }
    }
    const leading = await t.request('GET', '/api/v1/leads', { query: { per: '05' } });
    expect(leading.status).toBe(200);
    expect(leading.body.meta.per_page).toBe(5);
  });

  it('refuses a page past 2^53 and clamps a per however large', async () => {
    const page = await t.request('GET', '/api/v1/leads', {
      query: { page: '99999999999999999999' },
    });
    expect(page.status).toBe(400);
    expect(page.body.message).toMatch(/^page must be a positive integer up to 9007199254740991/);
    const per = await t.request('GET', '/api/v1/leads', {
      query: { per: '99999999999999999999' },
    });
    expect(per.status).toBe(200);
    expect(per.body.meta.per_page).toBe(100);
  });
});

describe('money', () => {
  it('refuses amounts past a billion, so cents stay whole numbers and amounts plain decimals', async () => {
    const total = await t.request('POST', '/api/v1/events', {
      json: event({ event_type_id: 1 }, { total_amount: 1e300 }),
    });
    expect(total.status).toBe(422);
    expect(Object.keys(total.body.errors)).toEqual(['total_amount']);
    expect(total.body.errors.total_amount[0]).toMatch(/less than or equal to 1000000000/);
    const expense = await t.request('POST', '/api/v1/expenses', {
      json: {
        payee_type: 'custom',
        payee_value: 'Venue',
        payment_date: '2027-06-01',
        amount: 1e300,
        ref_no: 'r-1',
      },
    });
    expect(expense.status).toBe(422);
    expect(Object.keys(expense.body.errors)).toEqual(['amount']);
    const categories = await t.request('GET', '/api/v1/add_on_categories');
    const addOn = await t.request('POST', '/api/v1/add_ons', {
      json: {
        add_on_category_id: Number(categories.body.data[0].id),
        name: 'Gold-plated booth',
        description: 'Too dear',
        price: '1000000000.01',
      },
    });
    expect(addOn.status).toBe(422);
    expect(Object.keys(addOn.body.errors)).toEqual(['price']);
    // A lead's budget is money too: 1e300 was stored, and answered as 1e+300.
    const lead = await t.request('POST', '/api/v1/leads', {
      json: { email: 'rich@example.com', estimated_budget: 1e300 },
    });
    expect(lead.status).toBe(422);
    expect(lead.body.errors).toEqual({
      estimated_budget: ['Estimated budget must be less than or equal to 1000000000'],
    });
    const leads = await t.request('GET', '/api/v1/leads', { query: { email: 'rich@example.com' } });
    expect(leads.body.meta.total_count).toBe(0);
    // The bound itself is taken, and read back as a plain decimal.
    const dear = await t.request('POST', '/api/v1/expenses', {
      json: {
        payee_type: 'custom',
        payee_value: 'Venue',
        payment_date: '2027-06-01',
        amount: 1_000_000_000,
        ref_no: 'r-2',
      },
    });
    expect(dear.status).toBe(200);
    expect(dear.body.data.attributes.amount_cents).toBe(100_000_000_000);
  });

  it('hit no internal error', () => {
    expect(t.internalErrors).toEqual([]);
  });
});
