import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { createEventNote } from '../../sandbox/resources/event-notes.js';
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
const PRICING = [
  'starting_balance',
  'deposit_amount_due',
  'custom_deposit_amount',
  'balance_amount_due',
];

function pkgId(name: string): number {
  const found = t.sb.ctx.records
    .list('package', t.sb.businessId)
    .records.find((r) => r.attrs.name === name);
  if (!found) throw new Error(`no package ${name}`);
  return found.id;
}

function backdropId(): number {
  const found = t.sb.ctx.records.list('photobooth_background', t.sb.businessId).records[0];
  if (!found) throw new Error('no backdrop');
  return found.id;
}

function keyWith(permissions: string[], userId = t.sb.userId): string {
  return t.sb.identity.createKey({ userId, permissions }).key;
}

function booking(date: string, extra: Record<string, unknown> = {}) {
  return {
    event_type_id: pkgId('Classic Booth'),
    starts_at_date: date,
    starts_at_time: '6:00 PM',
    ...extra,
  };
}

async function createEvent(body: Record<string, unknown>) {
  const res = await t.request('POST', '/api/v1/events', { json: body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

function insertLead(attrs: Record<string, unknown>) {
  return t.sb.ctx.records.insert('lead', t.sb.businessId, (id) => ({
    id,
    email: 'lead@example.com',
    first_name: 'Lena',
    last_name: 'Lead',
    phone: '555-0100',
    company_name: 'Lead Co',
    venue_name: 'The Barn',
    venue_city: 'Hudson',
    converted_to_event: false,
    ...attrs,
  }));
}

describe('POST /api/v1/events', () => {
  it('creates a confirmed booking (is_proposal false): booked_at set, event_autocomplete shape', async () => {
    const data = await createEvent({
      is_proposal: false,
      contact_type: 'New Customer',
      contact_name: 'Casey Customer',
      contact_email: 'casey@example.com',
      contact_phone: '555-0101',
      send_booking_confirmation_emails: true,
      send_contact_invitation_to_create_account: true,
      quick_event_bookings_attributes: { '0': booking('06-13-2030') },
    });
    expect(data.type).toBe('event_autocomplete');
    expect(data.id).toBe(String(data.attributes.id));
    expect(data.attributes).toEqual({
      id: expect.any(Number),
      title: expect.stringContaining('Classic Booth'),
      status: 'confirmed',
      formatted_status: 'Confirmed',
      booked_at: expect.stringMatching(OFFSET_ISO),
      starts_at: '2030-06-13T18:00:00-04:00',
      ends_at: '2030-06-13T21:00:00-04:00',
      starts_at_date: '06-13-2030',
      starts_at_time: '6:00 PM',
      preview_images: [{ event_type_variant: expect.any(String) }],
    });
  });

  it('creates a proposal with the date reserved: status proposal_date_reserved, booked_at null', async () => {
    const data = await createEvent({
      is_proposal: true,
      proposal_date_reserved: true,
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('06-14-2030') },
    });
    expect(data.attributes).toMatchObject({
      status: 'proposal_date_reserved',
      formatted_status: 'Proposal (Date Reserved)',
      booked_at: null,
    });
    const full = await t.request('GET', `/api/v1/events/${data.id}`);
    expect(full.body.data.attributes).toMatchObject({
      status: 'proposal_date_reserved',
      formatted_status: 'Proposal (Date Reserved)',
      booked_at: null,
      invoice_date: null,
    });
  });

  it('answers 422 naming each missing or ill-typed field, including fields of each booking entry', async () => {
    const empty = await t.request('POST', '/api/v1/events', { json: {} });
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual({
      meta: { status: 'error' },
      errors: {
        contact_type: ["Contact type can't be blank"],
        quick_event_bookings_attributes: ["Quick event bookings attributes can't be blank"],
      },
    });
    const entries = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'Someone',
        is_proposal: 'maybe',
        total_amount: 'lots',
        quick_event_bookings_attributes: {
          '0': { starts_at_time: '25:00' },
          '1': { event_type_id: 999999, starts_at_date: '2030-13-45' },
        },
      },
    });
    expect(entries.status).toBe(422);
    expect(entries.body.errors).toMatchObject({
      contact_type: [expect.stringContaining('is not included in the list')],
      is_proposal: ['Is proposal must be true or false'],
      total_amount: ['Total amount is not a number'],
      'quick_event_bookings_attributes.0.event_type_id': [
        "Quick event booking 0 event type can't be blank",
      ],
      'quick_event_bookings_attributes.0.starts_at_date': [
        "Quick event booking 0 starts at date can't be blank",
      ],
      'quick_event_bookings_attributes.0.starts_at_time': [expect.any(String)],
      'quick_event_bookings_attributes.1.event_type_id': [
        'Quick event booking 1 event type must exist',
      ],
      'quick_event_bookings_attributes.1.starts_at_date': [expect.any(String)],
    });
  });

  it('rejects the e-mail flags and custom fields where the spec does not allow them', async () => {
    const proposal = await t.request('POST', '/api/v1/events', {
      json: {
        is_proposal: true,
        proposal_date_reserved: true,
        contact_type: 'New Customer',
        contact_name: 'P Person',
        contact_email: 'p@example.com',
        send_booking_confirmation_emails: true,
        send_contact_invitation_to_create_account: true,
        quick_event_bookings_attributes: { '0': booking('07-01-2030') },
      },
    });
    expect(proposal.status).toBe(422);
    expect(proposal.body.errors.send_booking_confirmation_emails).toEqual([
      'Send booking confirmation emails is only available for a confirmed booking',
    ]);
    expect(proposal.body.errors.send_contact_invitation_to_create_account).toHaveLength(1);

    const existing = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'None',
        send_contact_invitation_to_create_account: true,
        quick_event_bookings_attributes: { '0': booking('07-01-2030') },
      },
    });
    expect(existing.status).toBe(422);
    expect(Object.keys(existing.body.errors)).toEqual([
      'send_contact_invitation_to_create_account',
    ]);

    const notCustom = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'None',
        quick_event_bookings_attributes: {
          '0': booking('07-01-2030', { one_off_custom_title: 'Mine' }),
        },
      },
    });
    expect(notCustom.status).toBe(422);
    expect(notCustom.body.errors['quick_event_bookings_attributes.0.one_off_custom_title']).toEqual(
      ['Quick event booking 0 one off custom title is only allowed for a custom package'],
    );

    const custom = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: {
        '0': {
          event_type_id: pkgId('Custom Experience'),
          starts_at_date: '07-01-2030',
          one_off_custom_title: 'Mirror maze',
          custom_description_html: '<p>One of a kind</p>',
        },
      },
    });
    expect(custom.attributes.title).toBe('Mirror maze');
  });

  it('requires customer_user_id for an existing customer and fills the customer fields', async () => {
    const missing = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'Existing Customer',
        quick_event_bookings_attributes: { '0': booking('07-02-2030') },
      },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({
      customer_user_id: ["Customer user can't be blank"],
    });
    const customer = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Erin Existing',
      email: 'erin@example.com',
      role: 'customer',
      permissions: [],
    });
    const created = await createEvent({
      contact_type: 'Existing Customer',
      customer_user_id: customer.id,
      quick_event_bookings_attributes: { '0': booking('07-02-2030') },
    });
    const full = await t.request('GET', `/api/v1/events/${created.id}`);
    expect(full.body.data.attributes).toMatchObject({
      customer_ids: String(customer.id),
      customer_names: 'Erin Existing',
      customer_emails: 'erin@example.com',
    });
    expect(full.body.data.relationships.event_users.data).toHaveLength(1);
  });

  it('creates one booking per quick_event_bookings_attributes entry, with computed or given end times', async () => {
    const data = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: {
        '0': booking('08-01-2030', { starts_at_time: '2:00 PM', ends_at_time: '' }),
        '1': {
          event_type_id: pkgId('Hourly Booth'),
          starts_at_date: '08-02-2030',
          starts_at_time: '7:00 PM',
          ends_at_time: '1:00 AM',
          backdrop_id: backdropId(),
        },
      },
    });
    expect(data.attributes.preview_images).toHaveLength(2);
    expect(data.attributes.starts_at).toBe('2030-08-01T14:00:00-04:00');
    expect(data.attributes.ends_at).toBe('2030-08-03T01:00:00-04:00');
    const full = await t.request('GET', `/api/v1/events/${data.id}`);
    const refs = full.body.data.relationships.event_bookings.data;
    expect(refs).toHaveLength(2);
    const [first, second] = await Promise.all(
      refs.map((r: { id: string }) => t.request('GET', `/api/v1/event_bookings/${r.id}`)),
    );
    expect(first.body.data.attributes).toMatchObject({
      starts_at: '2030-08-01T14:00:00-04:00',
      ends_at: '2030-08-01T17:00:00-04:00',
      length_in_minutes: '180.0',
      override_ends_at: false,
    });
    expect(second.body.data.attributes).toMatchObject({
      starts_at: '2030-08-02T19:00:00-04:00',
      ends_at: '2030-08-03T01:00:00-04:00',
      length_in_minutes: '360.0',
      override_ends_at: true,
    });
    expect(second.body.data.relationships.event_photobooth_background.data).toEqual({
      id: expect.any(String),
      type: 'event_photobooth_background',
    });
    expect(first.body.data.relationships.event_photobooth_background.data).toBeNull();
  });

  it('converts a lead: the lead becomes converted_to_event and supplies contact and venue', async () => {
    const lead = insertLead({ email: 'convert@example.com' });
    const data = await createEvent({
      lead_id: lead.id,
      contact_type: 'New Customer',
      quick_event_bookings_attributes: { '0': booking('09-09-2030') },
    });
    const stored = t.sb.ctx.records.get('lead', t.sb.businessId, lead.id);
    expect(stored?.attrs.converted_to_event).toBe(true);
    const full = await t.request('GET', `/api/v1/events/${data.id}`);
    expect(full.body.data.attributes).toMatchObject({
      customer_names: 'Lena Lead',
      customer_emails: 'convert@example.com',
      customer_phones: '555-0100',
      venue_name: 'The Barn',
      venue_city: 'Hudson',
    });
    const customerId = Number(full.body.data.attributes.customer_ids);
    expect(t.sb.identity.user(customerId)).toMatchObject({ role: 'customer', permissions: [] });

    const again = await t.request('POST', '/api/v1/events', {
      json: {
        lead_id: lead.id,
        contact_type: 'None',
        quick_event_bookings_attributes: { '0': booking('09-09-2030') },
      },
    });
    expect(again.status).toBe(422);
    expect(again.body.errors.lead_id).toEqual(['Lead has already been converted to an event']);
    const unknown = await t.request('POST', '/api/v1/events', {
      json: {
        lead_id: 999999,
        contact_type: 'None',
        quick_event_bookings_attributes: { '0': booking('09-09-2030') },
      },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual({ lead_id: ['Lead must exist'] });
    const untouched = insertLead({ email: 'untouched@example.com' });
    const failed = await t.request('POST', '/api/v1/events', {
      json: { lead_id: untouched.id, contact_type: 'Nobody' },
    });
    expect(failed.status).toBe(422);
    expect(
      t.sb.ctx.records.get('lead', t.sb.businessId, untouched.id)?.attrs.converted_to_event,
    ).toBe(false);
  });

  it('answers 403 without event write permission and 400 for malformed JSON', async () => {
    const readOnly = keyWith(['assigned_event_read', 'unassigned_event_read']);
    const res = await t.request('POST', '/api/v1/events', {
      key: readOnly,
      json: {
        contact_type: 'None',
        quick_event_bookings_attributes: { '0': booking('10-01-2030') },
      },
    });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('permission_denied');
    const bad = await t.request('POST', '/api/v1/events', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ meta: { status: 'error' }, status: 'bad_request' });
  });
});

describe('GET /api/v1/events/{event_id}', () => {
  it('returns every event attribute with the spec types, pricing as money quadruples', async () => {
    const created = await createEvent({
      contact_type: 'New Customer',
      contact_name: 'Quinn Quad',
      contact_email: 'quinn@example.com',
      add_tax: true,
      paid_amount: '100.00',
      custom_deposit_amount: 250,
      venue_address: '1 Main St',
      venue_city: 'Albany',
      quick_event_bookings_attributes: { '0': booking('10-10-2030') },
    });
    const res = await t.request('GET', `/api/v1/events/${created.id}`);
    expect(res.status).toBe(200);
    const { data, meta } = res.body;
    expect(meta).toEqual({ status: 'ok' });
    expect(data.type).toBe('event');
    expect(data.id).toBe(created.id);
    const a = data.attributes;
    expect(a).toMatchObject({
      id: Number(created.id),
      status: 'confirmed',
      formatted_status: 'Confirmed',
      formatted_status_with_context: expect.stringContaining('Confirmed'),
      booked_at: expect.stringMatching(OFFSET_ISO),
      created_at: expect.stringMatching(OFFSET_ISO),
      starts_at: '2030-10-10T18:00:00-04:00',
      ends_at: '2030-10-10T21:00:00-04:00',
      starts_at_date: '10-10-2030',
      starts_at_date_iso8601: '2030-10-10',
      starts_at_time: '6:00 PM',
      tax_rate: expect.stringMatching(/^\d+\.\d+$/),
      completed: false,
      canceled: false,
      postponed: false,
      package_name: 'Classic Booth',
      customer_ids: expect.stringMatching(/^\d+$/),
      customer_names: 'Quinn Quad',
      assigned_staff_ids: '',
      current_user_assigned: false,
      primary_image: { hero_variant: expect.any(String) },
      event_url: expect.stringMatching(/^https:\/\//),
      proposal_url: expect.stringMatching(/^https:\/\//),
      venue_map_url: expect.stringContaining('Albany'),
    });
    for (const field of [
      'customer_ids',
      'customer_names',
      'customer_emails',
      'customer_phones',
      'customer_and_contact_ids',
      'additional_contact_ids',
      'assigned_staff_names',
      'assigned_staff_abbreviations',
      'assigned_staff_emails',
      'add_on_names',
      'backdrop_names',
    ]) {
      expect(typeof a[field], field).toBe('string');
    }
    for (const name of PRICING) {
      expect(a, name).toHaveProperty(`${name}_currency`);
    }
    // 799.00 + 7% tax = 854.93; deposit 250.00 - 100.00 paid; balance 854.93 - 100.00.
    expect(a).toMatchObject({
      starting_balance: '854.93',
      starting_balance_cents: 85493,
      starting_balance_currency: 'USD',
      starting_balance_formatted: '$854.93',
      custom_deposit_amount: '250.00',
      deposit_amount_due_cents: 15000,
      balance_amount_due: '754.93',
    });
    expect(data.relationships).toEqual({
      event_bookings: { data: [{ id: expect.any(String), type: 'event_booking' }] },
      event_users: { data: [{ id: expect.any(String), type: 'event_user' }] },
      event_staff_members: { data: [] },
      event_staff_requests: { data: [] },
      contacts: { data: [] },
      notes: { data: [] },
    });
  });

  it('returns the four pricing fields (all four keys each) as null without a pricing permission', async () => {
    const created = await createEvent({
      contact_type: 'None',
      custom_deposit_amount: 100,
      quick_event_bookings_attributes: { '0': booking('10-11-2030') },
    });
    const key = keyWith(['assigned_event_read', 'unassigned_event_read']);
    const res = await t.request('GET', `/api/v1/events/${created.id}`, { key });
    expect(res.status).toBe(200);
    for (const name of PRICING) {
      for (const suffix of ['', '_cents', '_currency', '_formatted']) {
        expect(res.body.data.attributes, name + suffix).toHaveProperty(name + suffix, null);
      }
    }
    const withPricing = keyWith(['unassigned_event_read', 'unassigned_event_read_pricing']);
    const priced = await t.request('GET', `/api/v1/events/${created.id}`, { key: withPricing });
    expect(priced.body.data.attributes.starting_balance).toBe('799.00');
    expect(priced.body.data.attributes.custom_deposit_amount).toBe('100.00');
  });

  it('shows an event to an assigned_event_read key only once its user is assigned', async () => {
    const created = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('10-12-2030') },
    });
    const staff = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Sam Staff',
      email: 'sam@example.com',
      role: 'staff',
    });
    const key = keyWith(['assigned_event_read', 'assigned_event_read_pricing'], staff.id);
    expect((await t.request('GET', `/api/v1/events/${created.id}`, { key })).status).toBe(404);
    const record = getEvent(t.sb.ctx, t.sb.businessId, Number(created.id));
    if (!record) throw new Error('event missing');
    updateEvent(t.sb.ctx, record, { assigned_staff_ids: [staff.id] });
    const res = await t.request('GET', `/api/v1/events/${created.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      assigned_staff_ids: String(staff.id),
      assigned_staff_names: 'Sam Staff',
      assigned_staff_abbreviations: 'SS',
      current_user_assigned: true,
      starting_balance: '799.00',
    });
    expect(res.body.data.relationships.event_staff_members.data).toHaveLength(1);
  });

  it('shows staff-style edits: canceled flag and confirming a proposal sets booked_at', async () => {
    const created = await createEvent({
      is_proposal: true,
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('10-13-2030') },
    });
    expect(created.attributes.status).toBe('proposal');
    const record = getEvent(t.sb.ctx, t.sb.businessId, Number(created.id));
    if (!record) throw new Error('event missing');
    const confirmed = updateEvent(t.sb.ctx, record, { status: 'confirmed' });
    updateEvent(t.sb.ctx, confirmed, { canceled: true });
    const res = await t.request('GET', `/api/v1/events/${created.id}`);
    expect(res.body.data.attributes).toMatchObject({
      status: 'confirmed',
      canceled: true,
      booked_at: expect.stringMatching(OFFSET_ISO),
      formatted_status_with_context: expect.stringContaining('Canceled'),
    });
  });

  it('answers 404 for unknown or foreign ids, 403 without read permission, 400 for non-integer ids', async () => {
    expect((await t.request('GET', '/api/v1/events/999999')).status).toBe(404);
    const other = t.sb.identity.createBusiness({ name: 'Other' });
    const owner = t.sb.identity.createUser({
      businessId: other.id,
      name: 'Other Owner',
      email: 'o@example.com',
    });
    const otherKey = t.sb.identity.createKey({ userId: owner.id }).key;
    const mine = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('10-14-2030') },
    });
    const foreign = await t.request('GET', `/api/v1/events/${mine.id}`, { key: otherKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ meta: { status: 'error' }, status: 'not_found' });
    const noRead = keyWith(['lead_read']);
    expect((await t.request('GET', `/api/v1/events/${mine.id}`, { key: noRead })).status).toBe(403);
    expect((await t.request('GET', '/api/v1/events/abc')).status).toBe(400);
  });
});

describe('event bookings', () => {
  it('fetches an event booking with the spec attribute types', async () => {
    const addOnCategory = await t.request('POST', '/api/v1/add_on_categories', {
      json: { name: 'Booking extras' },
    });
    const addOn = await t.request('POST', '/api/v1/add_ons', {
      json: {
        add_on_category_id: addOnCategory.body.data.attributes.id,
        name: 'Props box',
        description: 'd',
        price: 40,
      },
    });
    const created = await createEvent({
      is_proposal: true,
      proposal_date_reserved: true,
      proposal_valid_through: '2020-01-01',
      contact_type: 'None',
      quick_event_bookings_attributes: {
        '0': booking('11-01-2030', { add_on_ids: [addOn.body.data.attributes.id] }),
      },
    });
    const event = await t.request('GET', `/api/v1/events/${created.id}`);
    const id = event.body.data.relationships.event_bookings.data[0].id;
    const res = await t.request('GET', `/api/v1/event_bookings/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe('event_booking');
    expect(res.body.data.attributes).toMatchObject({
      id: Number(id),
      event_id: Number(created.id),
      event_type_id: pkgId('Classic Booth'),
      name: 'Classic Booth',
      status: 'proposal_date_reserved',
      formatted_status: 'Proposal (Date Reserved)',
      canceled: false,
      postponed: false,
      date_mode: 'date_time',
      length_in_minutes: '180.0',
      length_in_days: 0,
      formatted_date_range: 'Fri, Nov 1, 2030',
      formatted_time_range: '6:00 PM - 9:00 PM',
      formatted_datetime_range: 'Fri, Nov 1, 2030 6:00 PM - 9:00 PM',
      expired_proposal: true,
      primary_image_attachment: { video_variant: expect.any(String) },
      override_price: null,
      override_price_cents: null,
      override_price_currency: null,
      override_price_formatted: null,
      taxable: true,
      package_group_name: 'Open-Air Booths',
      service_name: 'Photo Booth',
    });
    expect(res.body.data.relationships).toEqual({
      event_add_ons: { data: [{ id: expect.any(String), type: 'event_add_on' }] },
      event_photobooth_background: { data: null },
    });
    expect(event.body.data.attributes.add_on_names).toBe('Props box');
    expect((await t.request('GET', '/api/v1/event_bookings/999999')).status).toBe(404);
    expect(
      (await t.request('GET', `/api/v1/event_bookings/${id}`, { key: keyWith(['lead_read']) }))
        .status,
    ).toBe(403);
  });

  it('lists event bookings in a date window (YYYY-MM-DD, business time zone) with paging', async () => {
    for (const date of ['12-01-2031', '12-02-2031', '12-03-2031']) {
      await createEvent({
        contact_type: 'None',
        quick_event_bookings_attributes: { '0': booking(date, { starts_at_time: '11:30 PM' }) },
      });
    }
    const res = await t.request('GET', '/api/v1/event_bookings', {
      query: { event_date_start: '2031-12-02', event_date_end: '2031-12-03' },
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({
      status: 'ok',
      total_count: 2,
      per_page: 25,
      page: 1,
      total_pages: 1,
    });
    expect(res.body.data.map((d: any) => d.attributes.starts_at)).toEqual([
      '2031-12-02T23:30:00-05:00',
      '2031-12-03T23:30:00-05:00',
    ]);
    const paged = await t.request('GET', '/api/v1/event_bookings', {
      query: { event_date_start: '2031-12-01', event_date_end: '2031-12-03', per: 2, page: 2 },
    });
    expect(paged.body.meta).toMatchObject({ total_count: 3, per_page: 2, page: 2, total_pages: 2 });
    expect(paged.body.data).toHaveLength(1);
    for (const query of [
      { event_date_start: '12-01-2031' },
      { event_date_end: '2031-02-30' },
      { event_date_start: '2031-12-03', event_date_end: '2031-12-01' },
    ]) {
      const bad = await t.request('GET', '/api/v1/event_bookings', { query });
      expect(bad.status, JSON.stringify(query)).toBe(400);
      expect(bad.body.reason).toBe('invalid_parameter');
    }
    expect(
      (await t.request('GET', '/api/v1/event_bookings', { key: keyWith(['lead_read']) })).status,
    ).toBe(403);
  });
});

describe('event notes', () => {
  it('lets only the original author delete a note; others get 403, wrong event 404', async () => {
    const first = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('01-05-2032') },
    });
    const second = await createEvent({
      contact_type: 'None',
      quick_event_bookings_attributes: { '0': booking('01-06-2032') },
    });
    const colleague = t.sb.identity.createUser({
      businessId: t.sb.businessId,
      name: 'Cora Colleague',
      email: 'cora@example.com',
      role: 'staff',
    });
    const eventId = Number(first.id);
    const mine = createEventNote(
      t.sb.ctx,
      t.sb.businessId,
      eventId,
      t.sb.userId,
      'Bring extension cords',
    );
    const theirs = createEventNote(
      t.sb.ctx,
      t.sb.businessId,
      eventId,
      colleague.id,
      'Parking at rear',
    );

    const event = await t.request('GET', `/api/v1/events/${eventId}`);
    expect(event.body.data.relationships.notes.data).toEqual([
      { id: String(mine.id), type: 'note' },
      { id: String(theirs.id), type: 'note' },
    ]);

    const forbidden = await t.request('DELETE', `/api/v1/events/${eventId}/notes/${theirs.id}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ meta: { status: 'error' }, status: 'forbidden' });

    const wrongEvent = await t.request('DELETE', `/api/v1/events/${second.id}/notes/${mine.id}`);
    expect(wrongEvent.status).toBe(404);
    expect((await t.request('DELETE', `/api/v1/events/${eventId}/notes/999999`)).status).toBe(404);
    expect((await t.request('DELETE', `/api/v1/events/999999/notes/${mine.id}`)).status).toBe(404);

    const noRead = keyWith(['lead_read']);
    expect(
      (await t.request('DELETE', `/api/v1/events/${eventId}/notes/${mine.id}`, { key: noRead }))
        .status,
    ).toBe(403);

    const deleted = await t.request('DELETE', `/api/v1/events/${eventId}/notes/${mine.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ meta: { status: 'ok' } });
    expect((await t.request('DELETE', `/api/v1/events/${eventId}/notes/${mine.id}`)).status).toBe(
      404,
    );

    const colleagueKey = keyWith(['unassigned_event_read'], colleague.id);
    const byAuthor = await t.request('DELETE', `/api/v1/events/${eventId}/notes/${theirs.id}`, {
      key: colleagueKey,
    });
    expect(byAuthor.status).toBe(200);
    const after = await t.request('GET', `/api/v1/events/${eventId}`);
    expect(after.body.data.relationships.notes.data).toEqual([]);
  });
});
