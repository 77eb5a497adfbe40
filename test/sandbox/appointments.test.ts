import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { createAppointmentCalendar } from '../../sandbox/resources/appointments.js';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox();
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/;

let guestCounter = 0;
function body(extra: Record<string, unknown> = {}) {
  guestCounter += 1;
  return {
    guest_name: `Guest ${guestCounter}`,
    guest_email: `guest${guestCounter}@example.com`,
    starts_at_date: '2030-06-13',
    starts_at_time: '2:00 PM',
    length_in_minutes: 30,
    created_via: 'app',
    ...extra,
  };
}

async function create(extra: Record<string, unknown> = {}, key?: string) {
  const res = await t.request('POST', '/api/v1/appointments', {
    json: body(extra),
    ...(key ? { key } : {}),
  });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('POST /api/v1/appointments', () => {
  it('creates an appointment with defaults, zoned times and detail fields', async () => {
    const res = await t.request('POST', '/api/v1/appointments', {
      json: body({
        guest_phone: '555-0100',
        location: 'Zoom',
        location_details: 'https://zoom.example/j/123',
        message: 'Looking forward',
        additional_guests: ['partner@example.com', { name: 'Mom', email: 'mom@example.com' }],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ status: 'ok' });
    const d = res.body.data;
    expect(d.type).toBe('appointment');
    expect(typeof d.id).toBe('string');
    expect(d.attributes.id).toBe(Number(d.id));
    const a = d.attributes;
    expect(a.starts_at).toBe('2030-06-13T14:00:00-04:00');
    expect(a.ends_at).toBe('2030-06-13T14:30:00-04:00');
    expect(a).toMatchObject({
      user_id: t.sb.userId,
      staff_id: t.sb.userId,
      staff_name: expect.any(String),
      staff_email: expect.any(String),
      brand_id: expect.any(Number),
      brand_name: expect.any(String),
      guest_phone: '555-0100',
      starts_at_date: '2030-06-13',
      starts_at_time: '2:00 PM',
      length_in_minutes: 30,
      canceled: false,
      created_via: 'app',
      user_appointment_calendar_id: null,
      meeting_url: 'https://zoom.example/j/123',
      notifications_sent: [],
      additional_guests: [
        { name: null, email: 'partner@example.com' },
        { name: 'Mom', email: 'mom@example.com' },
      ],
    });
    expect(a.title).toContain(a.guest_name);
    expect(a.formatted_date_range).toBe('Thu, Jun 13, 2030');
    expect(a.formatted_time_range).toBe('2:00 PM - 2:30 PM');
    expect(a.created_at).toMatch(ISO_WITH_OFFSET);
    expect(a.starts_at).toMatch(ISO_WITH_OFFSET);
    expect(d.relationships.user_appointments.data).toHaveLength(1);
  });

  it('names every missing required field in one 422', async () => {
    const res = await t.request('POST', '/api/v1/appointments', { json: {} });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        guest_name: ["Guest name can't be blank"],
        guest_email: ["Guest email can't be blank"],
        starts_at_date: ["Starts at date can't be blank"],
        starts_at_time: ["Starts at time can't be blank"],
        length_in_minutes: ["Length in minutes can't be blank"],
        created_via: ["Created via can't be blank"],
      },
    });
  });

  it('rejects ill-typed and out-of-list values with 422', async () => {
    const res = await t.request('POST', '/api/v1/appointments', {
      json: body({
        guest_email: 'not-an-email',
        starts_at_date: '06-13-2030',
        starts_at_time: '25:00',
        length_in_minutes: '30',
        created_via: 'phone',
        user_id: 999_999,
        brand_id: 'x',
      }),
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual(
      [
        'brand_id',
        'created_via',
        'guest_email',
        'length_in_minutes',
        'starts_at_date',
        'starts_at_time',
        'user_id',
      ].sort(),
    );
    expect(res.body.errors.created_via[0]).toMatch(/^Created via is not included in the list/);
  });

  it('answers 403 without appointment_create and 400 for malformed JSON', async () => {
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['unassigned_appointment_write', 'unassigned_appointment_read'],
    });
    const denied = await t.request('POST', '/api/v1/appointments', { json: body(), key });
    expect(denied.status).toBe(403);
    expect(denied.body.status).toBe('forbidden');
    const bad = await t.request('POST', '/api/v1/appointments', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ meta: { status: 'error' }, status: 'bad_request' });
  });
});

describe('GET /api/v1/appointments/{id}', () => {
  it('fetches with include=user_appointments sideloaded', async () => {
    const created = await create();
    const res = await t.request('GET', `/api/v1/appointments/${created.id}`, {
      query: { include: 'user_appointments' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes.guest_email).toBe(created.attributes.guest_email);
    expect(res.body.included).toEqual([
      {
        id: expect.any(String),
        type: 'user_appointment',
        attributes: expect.objectContaining({
          appointment_id: Number(created.id),
          user_id: t.sb.userId,
        }),
        relationships: {},
      },
    ]);
    const plain = await t.request('GET', `/api/v1/appointments/${created.id}`);
    expect(plain.body.included).toBeUndefined();
  });

  it('answers 404 for unknown ids and for another business, 400 for a bad include', async () => {
    expect((await t.request('GET', '/api/v1/appointments/987654')).status).toBe(404);
    const other = t.sb.identity.createBusiness({ name: 'Other Co' });
    const otherUser = t.sb.identity.createUser({
      businessId: other.id,
      name: 'O',
      email: 'o@example.com',
    });
    const { key } = t.sb.identity.createKey({ userId: otherUser.id });
    const theirs = await create({}, key);
    const res = await t.request('GET', `/api/v1/appointments/${theirs.id}`);
    expect(res.status).toBe(404);
    expect(res.body.reason).toBe('record_not_found');
    const mine = await create();
    const badInclude = await t.request('GET', `/api/v1/appointments/${mine.id}`, {
      query: { include: 'guests' },
    });
    expect(badInclude.status).toBe(400);
  });

  it('answers 403 without any appointment read permission', async () => {
    const created = await create();
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    expect((await t.request('GET', `/api/v1/appointments/${created.id}`, { key })).status).toBe(
      403,
    );
  });
});

describe('GET /api/v1/appointments', () => {
  it('pages with meta and filters by dates, staff, cancel state, time and text', async () => {
    const tag = `flt${Date.now()}`;
    const a = await create({ starts_at_date: '2031-02-01', guest_name: `${tag} Alpha` });
    const b = await create({ starts_at_date: '2031-02-03', guest_name: `${tag} Beta` });
    const c = await create({ starts_at_date: '2031-02-05', guest_name: `${tag} Gamma` });
    await t.request('POST', `/api/v1/appointments/${b.id}/cancel`);

    const window = await t.request('GET', '/api/v1/appointments', {
      query: { start_date: '2031-02-01', end_date: '2031-02-03', search_text: tag },
    });
    expect(window.status).toBe(200);
    expect(window.body.meta).toEqual({
      status: 'ok',
      total_count: 2,
      per_page: 25,
      page: 1,
      total_pages: 1,
    });
    expect(window.body.data.map((d: any) => d.id)).toEqual([a.id, b.id]);

    const notCanceled = await t.request('GET', '/api/v1/appointments', {
      query: { search_text: tag.toUpperCase(), canceled_status: 'not_canceled' },
    });
    expect(notCanceled.body.data.map((d: any) => d.id)).toEqual([a.id, c.id]);
    const canceled = await t.request('GET', '/api/v1/appointments', {
      query: { search_text: tag, canceled_status: 'canceled' },
    });
    expect(canceled.body.data.map((d: any) => d.id)).toEqual([b.id]);

    const past = await t.request('GET', '/api/v1/appointments', {
      query: { search_text: tag, past_or_future: 'past' },
    });
    expect(past.body.meta.total_count).toBe(0);
    const paged = await t.request('GET', '/api/v1/appointments', {
      query: { search_text: tag, per: 2, page: 2, staff_id: 'my' },
    });
    expect(paged.body.meta).toMatchObject({ total_count: 3, per_page: 2, page: 2, total_pages: 2 });
    expect(paged.body.data.map((d: any) => d.id)).toEqual([c.id]);
    const otherStaff = await t.request('GET', '/api/v1/appointments', {
      query: { search_text: tag, staff_id: 424242 },
    });
    expect(otherStaff.body.meta.total_count).toBe(0);
  });

  it('answers 400 for malformed filters', async () => {
    for (const query of [
      { start_date: '02-01-2031' },
      { staff_id: 'me' },
      { canceled_status: 'maybe' },
      { past_or_future: 'soon' },
      { page: 0 },
    ]) {
      const res = await t.request('GET', '/api/v1/appointments', { query });
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body.reason).toBe('invalid_parameter');
    }
  });

  it('limits a key holding only assigned_appointment_read to its own appointments', async () => {
    const staff = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Sam Staff',
      email: 'sam@example.com',
      role: 'staff',
    });
    const { key } = t.sb.identity.createKey({
      userId: staff.id,
      permissions: ['assigned_appointment_read', 'appointment_create'],
    });
    const theirs = await create({ user_id: staff.id });
    const mine = await create();
    const list = await t.request('GET', '/api/v1/appointments', { key });
    expect(list.body.data.map((d: any) => d.id)).toEqual([theirs.id]);
    expect((await t.request('GET', `/api/v1/appointments/${mine.id}`, { key })).status).toBe(403);
  });
});

describe('PATCH /api/v1/appointments/{id}', () => {
  it('changes only the fields sent', async () => {
    const created = await create({ location: 'Office', private_notes: 'n1' });
    const res = await t.request('PATCH', `/api/v1/appointments/${created.id}`, {
      json: { location: 'Cafe' },
    });
    expect(res.status).toBe(200);
    const a = res.body.data.attributes;
    expect(a.location).toBe('Cafe');
    expect(a.private_notes).toBe('n1');
    expect(a.starts_at).toBe(created.attributes.starts_at);
    expect(a.notifications_sent).toEqual([]);
  });

  it('records a rescheduled notification when the start or end moves', async () => {
    const created = await create();
    const res = await t.request('PATCH', `/api/v1/appointments/${created.id}`, {
      json: { starts_at_time: '3:30 PM' },
    });
    const a = res.body.data.attributes;
    expect(a.starts_at).toBe('2030-06-13T15:30:00-04:00');
    expect(a.ends_at).toBe('2030-06-13T16:00:00-04:00');
    expect(a.notifications_sent).toEqual([
      {
        kind: 'rescheduled',
        recipient: created.attributes.guest_email,
        sent_at: expect.any(String),
      },
    ]);
    const longer = await t.request('PATCH', `/api/v1/appointments/${created.id}`, {
      json: { length_in_minutes: 90 },
    });
    expect(longer.body.data.attributes.ends_at).toBe('2030-06-13T17:00:00-04:00');
    expect(longer.body.data.attributes.notifications_sent).toHaveLength(2);
    const same = await t.request('PATCH', `/api/v1/appointments/${created.id}`, {
      json: { starts_at_date: '2030-06-13' },
    });
    expect(same.body.data.attributes.notifications_sent).toHaveLength(2);
  });

  it('answers 422 for blanks and bad types, 404 for unknown ids, 403 without write', async () => {
    const created = await create();
    const res = await t.request('PATCH', `/api/v1/appointments/${created.id}`, {
      json: { guest_name: '', length_in_minutes: 'long', starts_at_date: 'tomorrow' },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      guest_name: ["Guest name can't be blank"],
      length_in_minutes: ['Length in minutes must be an integer from 1 to 527040'],
      starts_at_date: ['Starts at date must be a date as YYYY-MM-DD, in the years 1900 to 2200'],
    });
    expect(
      (await t.request('PATCH', '/api/v1/appointments/999999', { json: { location: 'x' } })).status,
    ).toBe(404);
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['unassigned_appointment_read'],
    });
    expect(
      (await t.request('PATCH', `/api/v1/appointments/${created.id}`, { json: {}, key })).status,
    ).toBe(403);
  });
});

describe('delete, cancel, uncancel, duplicate', () => {
  it('soft-deletes: gone from lists and 404 afterwards', async () => {
    const tag = `del${Date.now()}`;
    const created = await create({ guest_name: tag });
    const res = await t.request('DELETE', `/api/v1/appointments/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ meta: { status: 'ok' } });
    expect((await t.request('GET', `/api/v1/appointments/${created.id}`)).status).toBe(404);
    const list = await t.request('GET', '/api/v1/appointments', { query: { search_text: tag } });
    expect(list.body.meta.total_count).toBe(0);
    expect(
      t.sb.ctx.records.get('appointment', t.sb.businessId, Number(created.id), {
        includeDeleted: true,
      }),
    ).toBeDefined();
    expect((await t.request('DELETE', `/api/v1/appointments/${created.id}`)).status).toBe(404);
  });

  it('cancels with a guest notification once, and uncancels', async () => {
    const created = await create();
    const canceled = await t.request('POST', `/api/v1/appointments/${created.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.data.attributes).toMatchObject({
      canceled: true,
      canceled_at: expect.any(String),
      notifications_sent: [{ kind: 'cancellation', recipient: created.attributes.guest_email }],
    });
    const again = await t.request('POST', `/api/v1/appointments/${created.id}/cancel`);
    expect(again.body.data.attributes.notifications_sent).toHaveLength(1);
    const restored = await t.request('POST', `/api/v1/appointments/${created.id}/uncancel`);
    expect(restored.body.data.attributes).toMatchObject({ canceled: false, canceled_at: null });
    expect((await t.request('POST', '/api/v1/appointments/999999/cancel')).status).toBe(404);
  });

  it('duplicates to a new date carrying guest details and settings', async () => {
    const created = await create({ location: 'Studio', private_notes: 'bring samples' });
    const res = await t.request('POST', `/api/v1/appointments/${created.id}/duplicate`, {
      json: { starts_at_date: '2030-07-01', starts_at_time: '10:00 AM' },
    });
    expect(res.status).toBe(200);
    const copy = res.body.data;
    expect(copy.id).not.toBe(created.id);
    expect(copy.attributes).toMatchObject({
      guest_name: created.attributes.guest_name,
      guest_email: created.attributes.guest_email,
      location: 'Studio',
      private_notes: 'bring samples',
      length_in_minutes: 30,
      starts_at: '2030-07-01T10:00:00-04:00',
      ends_at: '2030-07-01T10:30:00-04:00',
      canceled: false,
    });
  });

  it('duplicate needs both fields (422) and unassigned_appointment_write (403)', async () => {
    const created = await create();
    const res = await t.request('POST', `/api/v1/appointments/${created.id}/duplicate`, {
      json: {},
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      starts_at_date: ["Starts at date can't be blank"],
      starts_at_time: ["Starts at time can't be blank"],
    });
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['assigned_appointment_write', 'assigned_appointment_read'],
    });
    const denied = await t.request('POST', `/api/v1/appointments/${created.id}/duplicate`, {
      json: { starts_at_date: '2030-07-01', starts_at_time: '10:00 AM' },
      key,
    });
    expect(denied.status).toBe(403);
  });
});

describe('booking questions', () => {
  it('lists nothing and ignores answers for an appointment made without a calendar', async () => {
    const created = await create();
    const res = await t.request('GET', `/api/v1/appointments/${created.id}/booking_questions`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta).toMatchObject({ status: 'ok', total_count: 0 });
    const patch = await t.request('PATCH', `/api/v1/appointments/${created.id}/booking_questions`, {
      json: { custom_questions: { occasion: 'x' }, guest_phone: '555' },
    });
    expect(patch.status).toBe(200);
    expect(patch.body).toEqual({ meta: { status: 'ok' } });
    const after = await t.request('GET', `/api/v1/appointments/${created.id}`);
    expect(after.body.data.attributes.guest_phone).toBeNull();
  });

  it('lists custom and built-in entries of a calendar booking and updates them', async () => {
    const calendar = createAppointmentCalendar(t.sb.ctx, t.sb.businessId, {
      user_id: t.sb.userId,
      name: 'Consultation',
    });
    const created = await create({
      user_appointment_calendar_id: calendar.id,
      created_via: 'widget',
    });
    expect(created.attributes.title).toContain('Consultation');
    const path = `/api/v1/appointments/${created.id}/booking_questions`;
    const before = await t.request('GET', path);
    const columns = before.body.data.map((e: any) => e.attributes.column_name);
    expect(columns).toEqual([
      'occasion',
      'heard_about_us',
      'questions',
      'guest_phone',
      'event_date',
      'venue_name',
    ]);
    for (const entry of before.body.data) {
      expect(entry.type).toBe('appointment_booking_question');
      expect(entry.attributes).toMatchObject({
        label: expect.any(String),
        kind: expect.any(String),
        intent: expect.any(String),
        built_in: expect.any(Boolean),
        value: null,
        formatted_value: '',
      });
    }
    const builtIn = before.body.data.find((e: any) => e.attributes.column_name === 'event_date');
    expect(builtIn.id).toBe('event_date');
    expect(typeof before.body.data[0].attributes.id).toBe('number');

    const patch = await t.request('PATCH', path, {
      json: {
        custom_questions: { occasion: 'Wedding', unknown_column: 'ignored' },
        guest_phone: '555-0199',
        event_date: '2030-09-20',
        venue_name: 'Grand Hall',
      },
    });
    expect(patch.status).toBe(200);
    const second = await t.request('PATCH', path, {
      json: { custom_questions: { heard_about_us: 'Friend' } },
    });
    expect(second.status).toBe(200);
    const after = await t.request('GET', path);
    const byColumn = Object.fromEntries(
      after.body.data.map((e: any) => [e.attributes.column_name, e.attributes]),
    );
    expect(byColumn.occasion.value).toBe('Wedding');
    expect(byColumn.heard_about_us.value).toBe('Friend');
    expect(byColumn.guest_phone.value).toBe('555-0199');
    expect(byColumn.event_date).toMatchObject({
      value: '2030-09-20',
      formatted_value: 'Fri, Sep 20, 2030',
    });
    expect(byColumn.venue_name.value).toBe('Grand Hall');
    expect(byColumn.unknown_column).toBeUndefined();
  });

  it('PATCH needs custom_questions as an object (422), 404 for unknown ids', async () => {
    const created = await create();
    const path = `/api/v1/appointments/${created.id}/booking_questions`;
    const missing = await t.request('PATCH', path, { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({ custom_questions: ["Custom questions can't be blank"] });
    const wrong = await t.request('PATCH', path, { json: { custom_questions: ['a'] } });
    expect(wrong.status).toBe(422);
    const badDate = await t.request('PATCH', path, {
      json: { custom_questions: {}, event_date: 'soon' },
    });
    expect(badDate.body.errors.event_date).toBeDefined();
    expect((await t.request('GET', '/api/v1/appointments/999999/booking_questions')).status).toBe(
      404,
    );
  });
});
