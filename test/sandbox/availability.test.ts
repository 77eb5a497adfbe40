import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { ensureDefaultCalendar } from '../../sandbox/resources/availability.js';
import { getEvent } from '../../sandbox/resources/events-model.js';
import { updateEvent } from '../../sandbox/resources/events.js';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox();
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

const OFFSET_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/;

function pkgId(name: string): number {
  const found = t.sb.ctx.records
    .list('package', t.sb.businessId)
    .records.find((r) => r.attrs.name === name);
  if (!found) throw new Error(`no package ${name}`);
  return found.id;
}

function keyWith(permissions: string[]): string {
  return t.sb.identity.createKey({ userId: t.sb.userId, permissions }).key;
}

/** Books a package on a date (MM-DD-YYYY) and returns the event id. */
async function book(
  pkg: string,
  date: string,
  time = '6:00 PM',
  extra: Record<string, unknown> = {},
): Promise<number> {
  const res = await t.request('POST', '/api/v1/events', {
    json: {
      contact_type: 'None',
      ...extra,
      quick_event_bookings_attributes: {
        '0': { event_type_id: pkgId(pkg), starts_at_date: date, starts_at_time: time },
      },
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Number(res.body.data.id);
}

async function check(query: Record<string, string | number>) {
  const res = await t.request('GET', '/api/v1/availability', { query });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('GET /api/v1/availability', () => {
  it('goes from available to partially_available to fully_booked as bookings are added', async () => {
    const classic = pkgId('Classic Booth'); // two booths
    const before = await check({ event_date: '2032-05-01', package_id: classic });
    expect(before).toEqual({
      meta: { status: 'ok' },
      data: expect.objectContaining({
        status: 'available',
        available: true,
        package_id: classic,
        quantity_available: 2,
        quantity_booked: 0,
        quantity_remaining: 2,
      }),
    });
    await book('Classic Booth', '05-01-2032', '2:00 PM');
    expect((await check({ event_date: '2032-05-01', package_id: classic })).data).toMatchObject({
      status: 'partially_available',
      quantity_booked: 1,
      quantity_remaining: 1,
    });
    await book('Classic Booth', '05-01-2032', '7:00 PM');
    expect((await check({ event_date: '2032-05-01', package_id: classic })).data).toMatchObject({
      status: 'fully_booked',
      available: false,
      quantity_remaining: 0,
    });
    // Another day and another package are untouched.
    expect((await check({ event_date: '2032-05-02', package_id: classic })).data.status).toBe(
      'available',
    );
    expect(
      (await check({ event_date: '2032-05-01', package_id: pkgId('Glam Booth') })).data.status,
    ).toBe('available');
  });

  it('counts confirmed bookings and reserved proposals, not plain proposals or canceled events', async () => {
    const glam = pkgId('Glam Booth'); // one booth
    await book('Glam Booth', '05-10-2032', '6:00 PM', { is_proposal: true });
    expect((await check({ event_date: '2032-05-10', package_id: glam })).data.status).toBe(
      'available',
    );
    const eventId = await book('Glam Booth', '05-10-2032', '6:00 PM', {
      is_proposal: true,
      proposal_date_reserved: true,
    });
    expect((await check({ event_date: '2032-05-10', package_id: glam })).data.status).toBe(
      'fully_booked',
    );
    const record = getEvent(t.sb.ctx, t.sb.businessId, eventId);
    if (!record) throw new Error('event missing');
    updateEvent(t.sb.ctx, record, { canceled: true });
    expect((await check({ event_date: '2032-05-10', package_id: glam })).data.status).toBe(
      'available',
    );
  });

  it('accepts a starts_at/ends_at range and reports every package without package_id', async () => {
    await book('Ceremony + Reception', '05-21-2032');
    const body = await check({ starts_at: '2032-05-20', ends_at: '2032-05-22' });
    expect(body.data).toMatchObject({
      starts_at: '2032-05-20',
      ends_at: '2032-05-22',
      package_id: null,
      status: 'partially_available',
    });
    const dj = body.data.packages.find((p: any) => p.package_id === pkgId('Ceremony + Reception'));
    expect(dj).toMatchObject({
      quantity_available: 1,
      quantity_booked: 1,
      status: 'partially_available',
    });
  });

  it('answers 422 for missing dates, 400 for malformed values, 404 for an unknown package, 403 outside availability_read', async () => {
    const missing = await t.request('GET', '/api/v1/availability');
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      meta: { status: 'error' },
      errors: { event_date: [expect.stringContaining("Event date can't be blank")] },
    });
    const half = await t.request('GET', '/api/v1/availability', {
      query: { starts_at: '2032-05-20' },
    });
    expect(half.status).toBe(422);
    expect(half.body.errors).toEqual({ ends_at: ["Ends at can't be blank"] });
    for (const query of [
      { event_date: '05-20-2032' },
      { event_date: '2032-05-20', package_id: 'x' },
      { starts_at: '2032-05-22', ends_at: '2032-05-20' },
    ]) {
      const bad = await t.request('GET', '/api/v1/availability', { query });
      expect(bad.status, JSON.stringify(query)).toBe(400);
      expect(bad.body.reason).toBe('invalid_parameter');
    }
    expect(
      (
        await t.request('GET', '/api/v1/availability', {
          query: { event_date: '2032-05-20', package_id: 999999 },
        })
      ).status,
    ).toBe(404);
    const res = await t.request('GET', '/api/v1/availability', {
      key: keyWith(['offerings_read']),
      query: { event_date: '2032-05-20' },
    });
    expect(res.status).toBe(403);
  });
});

describe('GET /api/v1/availability/detailed', () => {
  it('reports overlapping bookings and messages for a package at a time', async () => {
    const glam = pkgId('Glam Booth');
    const url = '/api/v1/availability/detailed';
    const free = await t.request('GET', url, {
      query: {
        starts_at_date: '2032-06-05',
        starts_at_time: '5:00 PM',
        ends_at_time: '9:00 PM',
        package_id: glam,
      },
    });
    expect(free.status).toBe(200);
    expect(free.body).toEqual({
      meta: { status: 'ok' },
      available: true,
      messages: [],
      overlapping_bookings: [],
    });
    const eventId = await book('Glam Booth', '06-05-2032', '6:00 PM');
    const busy = await t.request('GET', url, {
      query: {
        starts_at: '2032-06-05T20:00:00-04:00',
        ends_at: '2032-06-05T23:00:00-04:00',
        package_id: glam,
      },
    });
    expect(busy.body.available).toBe(false);
    expect(busy.body.messages).toEqual([expect.stringContaining('Glam Booth')]);
    expect(busy.body.overlapping_bookings).toEqual([
      expect.objectContaining({
        event_id: eventId,
        event_type_id: glam,
        starts_at: '2032-06-05T18:00:00-04:00',
        ends_at: '2032-06-05T22:00:00-04:00',
      }),
    ]);
    // Right after the booking ends the booth is free again.
    const after = await t.request('GET', url, {
      query: {
        starts_at: '2032-06-05T22:00:00-04:00',
        ends_at: '2032-06-05T23:00:00-04:00',
        package_id: glam,
      },
    });
    expect(after.body.available).toBe(true);
  });

  it('checks a staff member against assigned events and appointments', async () => {
    const staff = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Dana DJ',
      email: 'dana@example.com',
      role: 'staff',
    });
    const url = '/api/v1/availability/detailed';
    const query = {
      starts_at: '2032-06-07T10:00:00-04:00',
      ends_at: '2032-06-07T11:00:00-04:00',
      staff_id: staff.id,
      lookup_type: 'staff',
    };
    expect((await t.request('GET', url, { query })).body.available).toBe(true);
    t.sb.ctx.records.insert('appointment', t.sb.businessId, (id) => ({
      id,
      user_id: staff.id,
      user_appointment_calendar_id: null,
      starts_at: '2032-06-07T10:30:00-04:00',
      ends_at: '2032-06-07T11:30:00-04:00',
      canceled: false,
    }));
    const busy = await t.request('GET', url, { query });
    expect(busy.body.available).toBe(false);
    expect(busy.body.messages).toEqual(['Dana DJ has an appointment at this time']);
  });

  it('validates its query: 422 without a time window, 400 for malformed values, 404 for unknown ids', async () => {
    const url = '/api/v1/availability/detailed';
    const missing = await t.request('GET', url, { query: { package_id: pkgId('Glam Booth') } });
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.errors)).toEqual(['starts_at']);
    const lookup = await t.request('GET', url, {
      query: { starts_at_date: '2032-06-05', lookup_type: 'backdrop' },
    });
    expect(lookup.status).toBe(422);
    expect(lookup.body.errors).toEqual({ backdrop_id: ["Backdrop can't be blank"] });
    for (const query of [
      { starts_at: 'yesterday', ends_at: '2032-06-05T10:00:00Z' },
      { starts_at_date: '2032-06-05', starts_at_time: '29:00' },
      { starts_at_date: '2032-06-05', lookup_type: 'planet' },
      { starts_at_date: '2032-06-05', quantity: 0 },
    ]) {
      const bad = await t.request('GET', url, { query });
      expect(bad.status, JSON.stringify(query)).toBe(400);
    }
    expect(
      (await t.request('GET', url, { query: { starts_at_date: '2032-06-05', add_on_id: 999999 } }))
        .status,
    ).toBe(404);
    expect(
      (
        await t.request('GET', url, {
          key: keyWith(['offerings_read']),
          query: { starts_at_date: '2032-06-05' },
        })
      ).status,
    ).toBe(403);
  });
});

describe('GET /api/v1/availability/time_slots', () => {
  it('lists slots with start, end, status and display name; booked times show fully_booked', async () => {
    const glam = pkgId('Glam Booth');
    await book('Glam Booth', '06-20-2032', '6:00 PM');
    const res = await t.request('GET', '/api/v1/availability/time_slots', {
      query: { event_date: '2032-06-20', package_id: glam, length_in_minutes: 60 },
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ status: 'ok' });
    const slots = res.body.data as any[];
    expect(slots.length).toBeGreaterThan(10);
    for (const slot of slots) {
      expect(slot).toEqual({
        starts_at: expect.stringMatching(OFFSET_ISO),
        ends_at: expect.stringMatching(OFFSET_ISO),
        status: expect.stringMatching(/^(available|partially_available|fully_booked)$/),
        display_name: expect.any(String),
      });
    }
    const byStart = new Map(slots.map((s) => [s.starts_at, s]));
    expect(byStart.get('2032-06-20T19:00:00-04:00')).toEqual({
      starts_at: '2032-06-20T19:00:00-04:00',
      ends_at: '2032-06-20T20:00:00-04:00',
      status: 'fully_booked',
      display_name: '7:00 PM - 8:00 PM',
    });
    expect(byStart.get('2032-06-20T17:00:00-04:00').status).toBe('available');
    expect(byStart.get('2032-06-20T22:00:00-04:00').status).toBe('available');
  });

  it('requires event_date and package_id (422 per field) and rejects malformed ones (400)', async () => {
    const missing = await t.request('GET', '/api/v1/availability/time_slots');
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({
      event_date: ["Event date can't be blank"],
      package_id: ["Package can't be blank"],
    });
    const bad = await t.request('GET', '/api/v1/availability/time_slots', {
      query: {
        event_date: '2032-06-20',
        package_id: pkgId('Glam Booth'),
        length_in_minutes: 'long',
      },
    });
    expect(bad.status).toBe(400);
    expect(
      (
        await t.request('GET', '/api/v1/availability/time_slots', {
          query: { event_date: '2032-06-20', package_id: 999999 },
        })
      ).status,
    ).toBe(404);
  });
});

describe('GET /api/v1/availability/appointment_slots', () => {
  it('lists a calendar day in slots, marking those overlapping appointments as booked', async () => {
    const calendar = ensureDefaultCalendar(t.sb.ctx, t.sb.businessId, t.sb.userId);
    const query = {
      user_id: t.sb.userId,
      user_appointment_calendar_id: calendar.id,
      selected_date: '2032-07-01',
    };
    const free = await t.request('GET', '/api/v1/availability/appointment_slots', { query });
    expect(free.status).toBe(200);
    expect(free.body.data).toHaveLength(16); // 9:00 to 17:00 in 30-minute slots
    expect(free.body.data.every((s: any) => s.status === 'available')).toBe(true);
    expect(free.body.data[0]).toEqual({
      starts_at: '2032-07-01T09:00:00-04:00',
      ends_at: '2032-07-01T09:30:00-04:00',
      status: 'available',
      display_name: '9:00 AM',
    });
    const appointment = (starts: string, ends: string, canceled = false) =>
      t.sb.ctx.records.insert('appointment', t.sb.businessId, (id) => ({
        id,
        user_id: t.sb.userId,
        user_appointment_calendar_id: calendar.id,
        starts_at: starts,
        ends_at: ends,
        canceled,
      }));
    appointment('2032-07-01T10:00:00-04:00', '2032-07-01T11:00:00-04:00');
    appointment('2032-07-01T13:00:00-04:00', '2032-07-01T14:00:00-04:00', true);
    const deleted = appointment('2032-07-01T15:00:00-04:00', '2032-07-01T15:30:00-04:00');
    t.sb.ctx.records.softDelete(deleted, t.sb.ctx.clock.iso());
    const res = await t.request('GET', '/api/v1/availability/appointment_slots', { query });
    const booked = res.body.data.filter((s: any) => s.status === 'booked');
    expect(booked.map((s: any) => s.display_name)).toEqual(['10:00 AM', '10:30 AM']);
  });

  it('requires all three parameters (422 per field), 404 for a calendar of someone else', async () => {
    const missing = await t.request('GET', '/api/v1/availability/appointment_slots');
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.errors).sort()).toEqual(
      ['selected_date', 'user_appointment_calendar_id', 'user_id'].sort(),
    );
    const other = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Other Staff',
      email: 'other@example.com',
      role: 'staff',
    });
    const calendar = ensureDefaultCalendar(t.sb.ctx, t.sb.businessId, other.id);
    const res = await t.request('GET', '/api/v1/availability/appointment_slots', {
      query: {
        user_id: t.sb.userId,
        user_appointment_calendar_id: calendar.id,
        selected_date: '2032-07-01',
      },
    });
    expect(res.status).toBe(404);
    const bad = await t.request('GET', '/api/v1/availability/appointment_slots', {
      query: {
        user_id: t.sb.userId,
        user_appointment_calendar_id: calendar.id,
        selected_date: 'July 1',
      },
    });
    expect(bad.status).toBe(400);
    const forbidden = await t.request('GET', '/api/v1/availability/appointment_slots', {
      key: keyWith(['availability_read']),
      query: {
        user_id: other.id,
        user_appointment_calendar_id: calendar.id,
        selected_date: '2032-07-01',
      },
    });
    expect(forbidden.status).toBe(403);
  });
});
