import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
let eventId: number;
beforeAll(async () => {
  t = await startTestSandbox();
  eventId = t.sb.ctx.records.insert('event', t.sb.businessId, (id) => ({
    id,
    title: 'Smith Wedding',
    starts_at: '2030-06-13T14:00:00-04:00',
  })).id;
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

const custom = (extra: Record<string, unknown> = {}) => ({
  payee_type: 'custom',
  payee_value: 'Party Rentals Inc',
  payment_date: '2030-05-01',
  payment_method: 'Check',
  amount: 125.5,
  ref_no: 'INV-001',
  ...extra,
});

async function create(extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/api/v1/expenses', { json: custom(extra) });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('POST /api/v1/expenses', () => {
  it('creates a custom-payee expense with money fields', async () => {
    const res = await t.request('POST', '/api/v1/expenses', {
      json: custom({ description: 'Tables', expense_category_id: 3, event_id: eventId }),
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ status: 'ok' });
    const d = res.body.data;
    expect(d.type).toBe('expense');
    expect(d.attributes.id).toBe(Number(d.id));
    expect(d.attributes).toMatchObject({
      payee_type: 'custom',
      payee_value: 'Party Rentals Inc',
      payee_name: 'Party Rentals Inc',
      staff_id: null,
      payment_date: '2030-05-01',
      payment_method: 'Check',
      amount: '125.50',
      amount_cents: 12550,
      amount_currency: 'USD',
      amount_formatted: '$125.50',
      ref_no: 'INV-001',
      description: 'Tables',
      expense_category_id: 3,
      event_id: eventId,
    });
    expect(d.relationships.event).toEqual({ data: { id: String(eventId), type: 'event' } });
    expect(d.attributes.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
  });

  it('creates a staff-payee expense for a staff member of the business', async () => {
    const staff = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Dee Jay',
      email: 'dj@example.com',
      role: 'staff',
    });
    const res = await t.request('POST', '/api/v1/expenses', {
      json: custom({ payee_type: 'staff', payee_value: undefined, staff_id: staff.id }),
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      payee_type: 'staff',
      staff_id: staff.id,
      staff_name: 'Dee Jay',
      payee_name: 'Dee Jay',
    });
  });

  it('names each missing required field', async () => {
    const res = await t.request('POST', '/api/v1/expenses', { json: {} });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        payee_type: ["Payee type can't be blank"],
        payment_date: ["Payment date can't be blank"],
        amount: ["Amount can't be blank"],
        ref_no: ["Ref no can't be blank"],
      },
    });
    const customMissing = await t.request('POST', '/api/v1/expenses', {
      json: custom({ payee_value: '' }),
    });
    expect(customMissing.body.errors).toEqual({ payee_value: ["Payee value can't be blank"] });
    const staffMissing = await t.request('POST', '/api/v1/expenses', {
      json: custom({ payee_type: 'staff' }),
    });
    expect(staffMissing.body.errors).toEqual({ staff_id: ["Staff can't be blank"] });
  });

  it('rejects wrong types, unknown staff and events with 422', async () => {
    const res = await t.request('POST', '/api/v1/expenses', {
      json: custom({
        payee_type: 'vendor',
        amount: '12.00',
        payment_date: '05/01/2030',
        event_id: 'one',
        expense_category_id: 1.5,
      }),
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      payee_type: ['Payee type is not included in the list (custom, staff)'],
      amount: ['Amount is not a number'],
      payment_date: ['Payment date must be a date as YYYY-MM-DD, in the years 1900 to 2200'],
      event_id: ['Event must be an integer greater than or equal to 1'],
      expense_category_id: ['Expense category must be an integer greater than or equal to 1'],
    });
    const customer = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Cus Tomer',
      email: 'c@example.com',
      role: 'customer',
    });
    const other = t.sb.identity.createBusiness({ name: 'Elsewhere' });
    const outsider = t.sb.identity.createUser({
      businessId: other.id,
      name: 'Out',
      email: 'out@example.com',
      role: 'staff',
    });
    for (const staffId of [customer.id, outsider.id, 999_999]) {
      const bad = await t.request('POST', '/api/v1/expenses', {
        json: custom({ payee_type: 'staff', staff_id: staffId }),
      });
      expect(bad.status).toBe(422);
      expect(bad.body.errors.staff_id).toEqual(['Staff is not a staff member of this business']);
    }
    const noEvent = await t.request('POST', '/api/v1/expenses', {
      json: custom({ event_id: 999_999 }),
    });
    expect(noEvent.body.errors).toEqual({ event_id: ['Event must exist'] });
  });

  it('answers 403 without expense_create and 400 for malformed JSON', async () => {
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['expense_read', 'expense_write'],
    });
    expect((await t.request('POST', '/api/v1/expenses', { json: custom(), key })).status).toBe(403);
    const bad = await t.request('POST', '/api/v1/expenses', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ meta: { status: 'error' }, reason: expect.any(String) });
  });
});

describe('GET /api/v1/expenses/{id}', () => {
  it('fetches; 404 for unknown and other-business ids; 403 without expense_read', async () => {
    const created = await create();
    const res = await t.request('GET', `/api/v1/expenses/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(created);
    expect((await t.request('GET', '/api/v1/expenses/999999')).status).toBe(404);
    const other = t.sb.identity.createBusiness({ name: 'Other' });
    const user = t.sb.identity.createUser({ businessId: other.id, name: 'X', email: 'x@x.com' });
    const { key: otherKey } = t.sb.identity.createKey({ userId: user.id });
    expect(
      (await t.request('GET', `/api/v1/expenses/${created.id}`, { key: otherKey })).status,
    ).toBe(404);
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['expense_create'],
    });
    expect((await t.request('GET', `/api/v1/expenses/${created.id}`, { key })).status).toBe(403);
  });
});

describe('PATCH /api/v1/expenses/{id}', () => {
  it('updates only the fields sent', async () => {
    const created = await create({ description: 'Chairs' });
    const res = await t.request('PATCH', `/api/v1/expenses/${created.id}`, {
      json: { amount: 99, payment_method: 'Card' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      amount: '99.00',
      amount_cents: 9900,
      payment_method: 'Card',
      description: 'Chairs',
      payee_value: 'Party Rentals Inc',
      ref_no: 'INV-001',
    });
  });

  it('re-checks the rules on the merged record', async () => {
    const created = await create();
    const toStaff = await t.request('PATCH', `/api/v1/expenses/${created.id}`, {
      json: { payee_type: 'staff' },
    });
    expect(toStaff.status).toBe(422);
    expect(toStaff.body.errors).toEqual({ staff_id: ["Staff can't be blank"] });
    const cleared = await t.request('PATCH', `/api/v1/expenses/${created.id}`, {
      json: { ref_no: null, payee_value: '' },
    });
    expect(cleared.body.errors).toEqual({
      payee_value: ["Payee value can't be blank"],
      ref_no: ["Ref no can't be blank"],
    });
    const ok = await t.request('PATCH', `/api/v1/expenses/${created.id}`, {
      json: { payee_type: 'staff', staff_id: t.sb.userId },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.attributes.staff_id).toBe(t.sb.userId);
  });

  it('answers 404 for unknown ids, 403 without expense_write, 422 for wrong types', async () => {
    const created = await create();
    expect((await t.request('PATCH', '/api/v1/expenses/999999', { json: {} })).status).toBe(404);
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['expense_read'] });
    expect(
      (await t.request('PATCH', `/api/v1/expenses/${created.id}`, { json: {}, key })).status,
    ).toBe(403);
    const wrong = await t.request('PATCH', `/api/v1/expenses/${created.id}`, {
      json: { amount: 'lots' },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors).toEqual({ amount: ['Amount is not a number'] });
  });
});

describe('DELETE /api/v1/expenses/{id}', () => {
  it('soft-deletes: 404 afterwards, record retained', async () => {
    const created = await create();
    const res = await t.request('DELETE', `/api/v1/expenses/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ meta: { status: 'ok' } });
    expect((await t.request('GET', `/api/v1/expenses/${created.id}`)).status).toBe(404);
    expect((await t.request('DELETE', `/api/v1/expenses/${created.id}`)).status).toBe(404);
    const kept = t.sb.ctx.records.get('expense', t.sb.businessId, Number(created.id), {
      includeDeleted: true,
    });
    expect(kept?.deletedAt).toEqual(expect.any(String));
    expect(
      t.sb.ctx.records.list('expense', t.sb.businessId).records.map((r) => r.id),
    ).not.toContain(Number(created.id));
  });
});
