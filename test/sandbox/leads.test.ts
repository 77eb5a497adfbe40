import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLead, updateLead } from '../../sandbox/resources/leads.js';
import type { LeadAttrs } from '../../sandbox/resources/leads-model.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
let staffId: number;
let otherStaffId: number;
let packageId: number;
let serviceId: number;

const OFFSET_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/;

function firstId(type: string): number {
  const { records } = t.sb.ctx.records.list(type, t.sb.businessId, { limit: 1 });
  const id = records[0]?.id;
  if (id === undefined) throw new Error(`no ${type} in the catalog`);
  return id;
}

beforeAll(async () => {
  t = await startTestSandbox();
  staffId = t.sb.identity.createUser({
    businessId: t.sb.businessId,
    name: 'Sam Staff',
    email: 'sam@sandbox.example',
    role: 'staff',
    permissions: ['lead_read'],
  }).id;
  otherStaffId = t.sb.identity.createUser({
    businessId: t.sb.businessId,
    name: 'Olive Other',
    email: 'olive@sandbox.example',
    role: 'staff',
    permissions: ['lead_read'],
  }).id;
  packageId = firstId('package');
  serviceId = firstId('service');
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

async function create(json: Record<string, unknown>) {
  return t.request('POST', '/api/v1/leads', { json });
}

describe('POST /api/v1/leads', () => {
  it('creates a lead with the default flags, origin API for a key, and spec field types', async () => {
    const res = await create({
      email: 'Ada@Example.com ',
      first_name: 'Ada',
      last_name: 'Lovelace',
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ status: 'ok' });
    const { data } = res.body;
    expect(data.type).toBe('lead');
    expect(typeof data.id).toBe('string');
    const a = data.attributes;
    expect(a.id).toBe(Number(data.id));
    expect(a).toMatchObject({
      email: 'ada@example.com',
      first_name: 'Ada',
      last_name: 'Lovelace',
      origin: 'API',
      spam: false,
      archived: false,
      converted_to_event: false,
      times_contacted: 0,
      event_date: null,
      starts_at: null,
      formatted_date_range: '',
      formatted_time_range: '',
      formatted_datetime_range: '',
      custom_fields: [],
      title: 'Ada Lovelace',
    });
    expect(a.token).toEqual(expect.any(String));
    expect(a.token.length).toBeGreaterThan(10);
    expect(() => new URL(a.resume_booking_link as string)).not.toThrow();
    expect(a.created_at).toMatch(OFFSET_ISO);
    expect(a.created_at_description).toEqual(expect.any(String));
    expect(a.brand_id).toEqual(expect.any(Number));
    expect(a.brand_name).toBe('Sandbox Photo Booths');
    expect(data.relationships.lead_bookings).toEqual({ data: [] });
  });

  it('keeps every body field with its type and fills the primary booking from the package', async () => {
    const res = await create({
      email: 'full@example.com',
      first_name: 'Fay',
      last_name: 'Full',
      phone: '(555) 123-4567',
      company_name: 'Full Co',
      staff_id: staffId,
      lead_source: 'Lead Form',
      contact_preference: 'Text Message',
      lead_type: 'Wedding',
      notes: 'Private note',
      event_date: '2026-06-13',
      event_time: '6:00 PM',
      length_in_minutes: 150,
      estimated_budget: 1500.5,
      estimated_number_guests: 120,
      venue_name: 'Grand Hall',
      venue_address: '1 Main St',
      venue_city: 'Springfield',
      venue_state: 'IL',
      venue_zip: '62701',
      indoor_outdoor: 'Indoor',
      package_id: packageId,
      next_follow_up_on: '2026-05-01',
      subject: 'Booth please',
      message: 'Hello',
      utm_source: 'newsletter',
      utm_campaign: 'spring',
      utm_medium: 'email',
      utm_term: 'booth',
      utm_content: 'hero',
      ad_click_id: 'abc123',
      referred_by_user_id: t.sb.userId,
    });
    expect(res.status).toBe(200);
    const a = res.body.data.attributes;
    expect(a).toMatchObject({
      phone: '(555) 123-4567',
      phone_normalized: '+15551234567',
      company_name: 'Full Co',
      source: 'Lead Form',
      lead_type: 'Wedding',
      notes: 'Private note',
      estimated_budget: 1500.5,
      estimated_number_guests: 120,
      venue_name: 'Grand Hall',
      venue_address: '1 Main St',
      indoor_outdoor: 'Indoor',
      next_follow_up_on: '2026-05-01',
      subject: 'Booth please',
      utm_source: 'newsletter',
      utm_content: 'hero',
      ad_click_id: 'abc123',
      event_date: '2026-06-13',
      event_time: '6:00 PM',
      length_in_minutes: 150,
      length_in_hours: 2.5,
      length: '2 hours 30 minutes',
      starts_at: '2026-06-13T18:00:00-04:00',
      ends_at: '2026-06-13T20:30:00-04:00',
      event_type_id: packageId,
      package_name: 'Classic Booth',
      package_group_name: 'Open-Air Booths',
      service_name: 'Photo Booth',
      formatted_date_range: 'Sat, Jun 13, 2026',
      formatted_time_range: '6:00 PM - 8:30 PM',
      formatted_datetime_range: 'Sat, Jun 13, 2026 6:00 PM - 8:30 PM',
      referred_by_user_id: t.sb.userId,
      referred_by_user_name: 'Avery Owner',
      referred_by_user_email: 'owner@sandbox.example',
    });
    expect(a.venue_map_url).toMatch(/^https:\/\//);
    const refs = res.body.data.relationships.lead_bookings.data;
    expect(refs).toHaveLength(1);
    expect(refs[0].type).toBe('lead_booking');
    const booking = await t.request('GET', `/api/v1/lead_bookings/${refs[0].id}`);
    expect(booking.body.data.attributes).toMatchObject({
      lead_id: a.id,
      event_type_id: packageId,
      name: 'Classic Booth',
      service_name: 'Photo Booth',
      package_group_name: 'Open-Air Booths',
      staff_id: staffId,
      staff_name: 'Sam Staff',
      date_mode: 'date_time',
    });
  });

  it('uses the package default length when none is sent, and service_id without a package', async () => {
    const withPackage = await create({
      email: 'len@example.com',
      event_date: '2026-07-04',
      package_id: packageId,
    });
    expect(withPackage.body.data.attributes).toMatchObject({
      length_in_minutes: 180,
      event_time: null,
      formatted_time_range: '',
      formatted_date_range: 'Sat, Jul 4, 2026',
    });
    const withService = await create({ email: 'svc@example.com', service_id: serviceId });
    expect(withService.body.data.attributes).toMatchObject({
      service_name: 'Photo Booth',
      package_name: null,
      event_date: null,
    });
  });

  it('accepts the legacy names, with the current names winning', async () => {
    const legacy = await create({
      email: 'legacy@example.com',
      employee_id: staffId,
      venue_street: '9 Old Rd',
      event_length: 90,
      event_date: '2026-08-01',
      contact_form_id: 12,
    });
    expect(legacy.status).toBe(200);
    expect(legacy.body.data.attributes).toMatchObject({
      venue_address: '9 Old Rd',
      length_in_minutes: 90,
    });
    const bookingId = legacy.body.data.relationships.lead_bookings.data[0].id;
    expect(
      (await t.request('GET', `/api/v1/lead_bookings/${bookingId}`)).body.data.attributes.staff_id,
    ).toBe(staffId);

    const both = await create({
      email: 'both@example.com',
      staff_id: otherStaffId,
      employee_id: staffId,
      venue_address: 'New St',
      venue_street: 'Old St',
      length_in_minutes: 60,
      event_length: 90,
      event_date: '2026-08-02',
    });
    expect(both.body.data.attributes).toMatchObject({
      venue_address: 'New St',
      length_in_minutes: 60,
    });
    const bothBooking = both.body.data.relationships.lead_bookings.data[0].id;
    expect(
      (await t.request('GET', `/api/v1/lead_bookings/${bothBooking}`)).body.data.attributes
        .staff_id,
    ).toBe(otherStaffId);
  });

  it('answers 422 naming each missing or ill-typed field', async () => {
    const res = await create({
      first_name: 5,
      length_in_minutes: '90',
      estimated_budget: 'lots',
      estimated_number_guests: 1.5,
      lead_source: 'Carrier Pigeon',
      contact_preference: 'Fax',
      indoor_outdoor: 'Underwater',
      event_date: '06/13/2026',
      event_time: 'dusk',
      next_follow_up_on: '2026-02-30',
      custom_questions: 'nope',
    });
    expect(res.status).toBe(422);
    expect(res.body.meta).toEqual({ status: 'error' });
    const e = res.body.errors;
    expect(e.email).toEqual(["Email can't be blank"]);
    expect(e.first_name).toEqual(['First name must be a string']);
    expect(e.length_in_minutes).toEqual(['Length in minutes must be an integer from 1 to 527040']);
    expect(e.estimated_budget).toEqual(['Estimated budget is not a number']);
    expect(e.estimated_number_guests).toEqual([
      'Estimated number guests must be an integer greater than or equal to 0',
    ]);
    expect(e.lead_source[0]).toMatch(/^Lead source is not included in the list/);
    expect(e.contact_preference[0]).toMatch(/^Contact preference is not included in the list/);
    expect(e.indoor_outdoor[0]).toMatch(/^Indoor outdoor is not included in the list/);
    expect(e.event_date[0]).toMatch(/^Event date must be a date/);
    expect(e.event_time[0]).toMatch(/^Event time must be a time/);
    expect(e.next_follow_up_on[0]).toMatch(/^Next follow up on must be a date/);
    expect(e.custom_questions[0]).toMatch(/^Custom questions must be an object/);
  });

  it('rejects an invalid e-mail and unknown package, service, staff and referrer with 422', async () => {
    const res = await create({
      email: 'not-an-email',
      package_id: 999_999,
      service_id: 999_999,
      staff_id: 999_999,
      referred_by_user_id: 999_999,
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      email: ['Email is invalid'],
      package_id: ['Package must exist'],
      service_id: ['Service must exist'],
      staff_id: ['Staff must exist'],
      referred_by_user_id: ['Referred by user must exist'],
    });
    const legacy = await create({ email: 'x@example.com', employee_id: 999_999 });
    expect(legacy.body.errors).toEqual({ employee_id: ['Employee must exist'] });
  });

  it('stores custom_questions answers by column name and rejects unknown ones', async () => {
    const ok = await create({
      email: 'answers@example.com',
      custom_questions: { how_did_you_hear_about_us: 'A friend' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.attributes.custom_fields).toEqual([
      expect.objectContaining({ column_name: 'how_did_you_hear_about_us', value: 'A friend' }),
    ]);
    const bad = await create({ email: 'bad@example.com', custom_questions: { shoe_size: 9 } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.custom_questions[0]).toMatch(/shoe_size/);
  });

  it('answers 403 without lead_create, 400 for malformed JSON or a non-object body', async () => {
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    const denied = await t.request('POST', '/api/v1/leads', {
      key,
      json: { email: 'x@example.com' },
    });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ meta: { status: 'error' }, status: 'forbidden' });
    const malformed = await t.request('POST', '/api/v1/leads', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      meta: { status: 'error' },
      status: expect.any(String),
      reason: expect.any(String),
      message: expect.any(String),
    });
    const array = await t.request('POST', '/api/v1/leads', { json: [{ email: 'x@example.com' }] });
    expect(array.status).toBe(400);
  });
});

describe('GET /api/v1/leads/{lead_id}', () => {
  it('returns the lead with lead_bookings references, sideloaded with include', async () => {
    const created = await create({ email: 'get@example.com', event_date: '2026-09-09' });
    const id = created.body.data.id;
    const res = await t.request('GET', `/api/v1/leads/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.attributes.email).toBe('get@example.com');
    expect(res.body.data.relationships.lead_bookings.data).toHaveLength(1);
    expect(res.body.included).toBeUndefined();
    const withInclude = await t.request('GET', `/api/v1/leads/${id}`, {
      query: { include: 'lead_bookings' },
    });
    expect(withInclude.body.included).toEqual([
      expect.objectContaining({ type: 'lead_booking', id: expect.any(String) }),
    ]);
  });

  it('reflects staff edits made through updateLead', async () => {
    const created = await create({ email: 'edit@example.com' });
    const record = t.sb.ctx.records.get<LeadAttrs>(
      'lead',
      t.sb.businessId,
      Number(created.body.data.id),
    );
    if (!record) throw new Error('lead not stored');
    updateLead(t.sb.ctx, record, { archived: true, times_contacted: 2, notes: 'Called twice' });
    const res = await t.request('GET', `/api/v1/leads/${record.id}`);
    expect(res.body.data.attributes).toMatchObject({
      archived: true,
      times_contacted: 2,
      notes: 'Called twice',
    });
  });

  it('keeps text search in step with staff edits and deletions', async () => {
    const word = `kestrel${Date.now().toString(36)}`;
    const created = await create({ email: 'search-edit@example.com', last_name: `${word}old` });
    const id = Number(created.body.data.id);
    const found = async (text: string) =>
      (await t.request('GET', '/api/v1/leads', { query: { text } })).body.data.map((d: any) =>
        Number(d.id),
      );
    expect(await found(`${word}old`)).toEqual([id]);
    // Both searches were asked before the edit: what the sandbox keeps of them must not outlive it.
    expect(await found(`${word}new`)).toEqual([]);
    const record = t.sb.ctx.records.get<LeadAttrs>('lead', t.sb.businessId, id);
    if (!record) throw new Error('lead not stored');
    const edited = updateLead(t.sb.ctx, record, { last_name: `${word}new` });
    expect(await found(`${word}old`)).toEqual([]);
    expect(await found(`${word}new`)).toEqual([id]);
    t.sb.ctx.records.hardDelete(edited);
    expect(await found(`${word}new`)).toEqual([]);
  });

  it("answers 404 for an unknown id and another business's lead, 400 for a non-integer id", async () => {
    expect((await t.request('GET', '/api/v1/leads/999999')).status).toBe(404);
    const other = t.sb.identity.createBusiness({ name: 'Other Biz' });
    const foreign = createLead(t.sb.ctx, other.id, { email: 'foreign@example.com' });
    const res = await t.request('GET', `/api/v1/leads/${foreign.id}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ meta: { status: 'error' }, status: 'not_found' });
    expect((await t.request('GET', '/api/v1/leads/abc')).status).toBe(400);
  });

  it('answers 403 without lead_read', async () => {
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_create'] });
    expect((await t.request('GET', '/api/v1/leads', { key })).status).toBe(403);
    expect((await t.request('GET', '/api/v1/leads/1', { key })).status).toBe(403);
  });
});

describe('GET /api/v1/leads', () => {
  const tag = `f${Date.now().toString(36)}`;
  beforeAll(async () => {
    await create({
      email: `zelda.${tag}@example.com`,
      first_name: 'Zelda',
      last_name: tag,
      phone: '555-867-5309',
      venue_name: 'Hyrule Castle',
      notes: 'Loves the triforce backdrop',
      lead_type: `type-${tag}`,
      lead_source: 'Manual Entry',
      event_date: '2026-10-10',
      event_time: '1:30 PM',
      length_in_minutes: 120,
      package_id: packageId,
    });
    await create({
      email: `link.${tag}@example.com`,
      first_name: 'Link',
      last_name: tag,
      lead_type: `type-${tag}`,
      lead_source: 'Online Booking',
    });
    createLead(
      t.sb.ctx,
      t.sb.businessId,
      { email: `form.${tag}@example.com`, first_name: 'Formy', last_name: tag },
      { origin: 'Lead Form' },
    );
  });

  async function list(query: Record<string, string | number>) {
    const res = await t.request('GET', '/api/v1/leads', { query });
    expect(res.status).toBe(200);
    return res.body;
  }

  it('lists with the list meta', async () => {
    const body = await list({});
    expect(body.meta).toMatchObject({ status: 'ok', page: 1, per_page: 25 });
    expect(body.meta.total_count).toBeGreaterThanOrEqual(3);
    expect(body.meta.total_pages).toBe(Math.ceil(body.meta.total_count / 25));
    for (const item of body.data) expect(item.type).toBe('lead');
  });

  it('filters by exact e-mail', async () => {
    const body = await list({ email: `ZELDA.${tag}@example.com` });
    expect(body.data.map((d: any) => d.attributes.first_name)).toEqual(['Zelda']);
    expect((await list({ email: `zelda.${tag}@example` })).meta.total_count).toBe(0);
  });

  it('searches text over name, e-mail, phone, venue and notes', async () => {
    const names = async (text: string) =>
      (await list({ text })).data.map((d: any) => d.attributes.first_name).sort();
    expect(await names(tag)).toEqual(['Formy', 'Link', 'Zelda']);
    expect(await names(`zelda ${tag}`)).toEqual(['Zelda']);
    expect(await names(`link.${tag}@example.com`)).toEqual(['Link']);
    expect(await names('555-867-5309')).toEqual(['Zelda']);
    expect(await names('5558675309')).toEqual(['Zelda']);
    expect(await names('hyrule')).toEqual(['Zelda']);
    expect(await names('triforce')).toEqual(['Zelda']);
    expect(await names(`nobody-${tag}`)).toEqual([]);
  });

  it('filters by origin, lead_type and source', async () => {
    const origin = await list({ origin: 'Lead Form', text: tag });
    expect(origin.data.map((d: any) => d.attributes.first_name)).toEqual(['Formy']);
    const apiOrigin = await list({ origin: 'API', text: tag });
    expect(apiOrigin.meta.total_count).toBe(2);
    const byType = await list({ lead_type: `type-${tag}` });
    expect(byType.meta.total_count).toBe(2);
    const bySource = await list({ source: 'Online Booking', text: tag });
    expect(bySource.data.map((d: any) => d.attributes.first_name)).toEqual(['Link']);
  });

  it('flattens the primary booking into list items, and sideloads bookings with include', async () => {
    const plain = await list({ email: `zelda.${tag}@example.com` });
    const a = plain.data[0].attributes;
    expect(a).toMatchObject({
      event_date: '2026-10-10',
      event_time: '1:30 PM',
      length_in_minutes: 120,
      starts_at: '2026-10-10T13:30:00-04:00',
      ends_at: '2026-10-10T15:30:00-04:00',
      package_name: 'Classic Booth',
      service_name: 'Photo Booth',
      package_group_name: 'Open-Air Booths',
      event_type_id: packageId,
      formatted_time_range: '1:30 PM - 3:30 PM',
    });
    expect(plain.data[0].relationships).toEqual({});
    expect(plain.included).toBeUndefined();

    const included = await list({ text: tag, include: 'lead_bookings' });
    const zelda = included.data.find((d: any) => d.attributes.first_name === 'Zelda');
    const link = included.data.find((d: any) => d.attributes.first_name === 'Link');
    expect(zelda.relationships.lead_bookings.data).toHaveLength(1);
    expect(link.relationships.lead_bookings).toEqual({ data: [] });
    expect(included.included).toEqual([
      expect.objectContaining({
        type: 'lead_booking',
        id: zelda.relationships.lead_bookings.data[0].id,
      }),
    ]);
    expect(included.included[0].attributes.lead_id).toBe(zelda.attributes.id);
  });

  it('pages in id order without gaps or repeats', async () => {
    const total = (await list({})).meta.total_count as number;
    const seen: number[] = [];
    const pages = Math.ceil(total / 2);
    for (let page = 1; page <= pages; page += 1) {
      const body = await list({ page, per: 2 });
      expect(body.meta).toMatchObject({ page, per_page: 2, total_pages: pages });
      seen.push(...body.data.map((d: any) => d.attributes.id));
    }
    expect(seen).toHaveLength(total);
    expect([...seen].sort((x, y) => x - y)).toEqual(seen);
    expect(new Set(seen).size).toBe(total);
  });

  it('answers 400 invalid_parameter for an unknown include or a malformed page', async () => {
    const include = await t.request('GET', '/api/v1/leads', { query: { include: 'events' } });
    expect(include.status).toBe(400);
    expect(include.body.reason).toBe('invalid_parameter');
    expect(include.body.message).toMatch(/lead_bookings/);
    const page = await t.request('GET', '/api/v1/leads', { query: { page: 0 } });
    expect(page.status).toBe(400);
    expect(page.body.reason).toBe('invalid_parameter');
    const repeated = await t.request('GET', '/api/v1/leads', { query: { email: ['a', 'b'] } });
    expect(repeated.status).toBe(400);
  });
});

describe('booking questions', () => {
  let leadId: string;
  beforeAll(async () => {
    const res = await create({
      email: 'questions@example.com',
      utm_source: 'google',
      utm_campaign: 'summer',
    });
    leadId = res.body.data.id;
  });

  it('lists business questions (editable, integer ids) then built-in utm entries', async () => {
    const res = await t.request('GET', `/api/v1/leads/${leadId}/booking_questions`);
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ status: 'ok', total_count: res.body.data.length });
    const entries = res.body.data.map((d: any) => d.attributes);
    const custom = entries.filter((e: any) => e.editable);
    expect(custom.length).toBeGreaterThanOrEqual(2);
    for (const e of custom) {
      expect(e).toMatchObject({
        id: expect.any(Number),
        lead_id: Number(leadId),
        booking_question_id: e.id,
        column_name: expect.any(String),
        label: expect.any(String),
        kind: 'text',
        value: null,
        archived: false,
      });
    }
    expect(custom.map((e: any) => e.label)).toContain('How did you hear about us?');
    const builtIn = entries.filter((e: any) => !e.editable);
    expect(builtIn.map((e: any) => e.id)).toEqual([
      'utm_source',
      'utm_campaign',
      'utm_medium',
      'utm_term',
      'utm_content',
    ]);
    expect(builtIn[0]).toMatchObject({ value: 'google', formatted_value: 'google' });
    expect(builtIn[1]).toMatchObject({ value: 'summer' });
    expect(builtIn[2]).toMatchObject({ value: null });
    expect(res.body.data.find((d: any) => d.id === 'utm_source').type).toBe(
      'lead_booking_question',
    );
  });

  it('PATCH touches only the keys sent and preserves the other answers', async () => {
    const path = `/api/v1/leads/${leadId}/booking_questions`;
    const first = await t.request('PATCH', path, {
      json: {
        custom_questions: { how_did_you_hear_about_us: 'Instagram', number_of_guests: '150' },
      },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ meta: { status: 'ok' } });
    await t.request('PATCH', path, {
      json: { custom_questions: { number_of_guests: '200' } },
    });
    const values = Object.fromEntries(
      (await t.request('GET', path)).body.data.map((d: any) => [
        d.attributes.column_name,
        d.attributes.value,
      ]),
    );
    expect(values).toMatchObject({
      how_did_you_hear_about_us: 'Instagram',
      number_of_guests: '200',
      utm_source: 'google',
    });
    await t.request('PATCH', path, { json: { custom_questions: { number_of_guests: null } } });
    const after = (await t.request('GET', path)).body.data.find(
      (d: any) => d.attributes.column_name === 'number_of_guests',
    );
    expect(after.attributes.value).toBeNull();
  });

  it('PATCH answers 422 for a missing body, unknown or read-only columns, changing nothing', async () => {
    const path = `/api/v1/leads/${leadId}/booking_questions`;
    const missing = await t.request('PATCH', path, { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors.custom_questions).toEqual(["Custom questions can't be blank"]);
    const wrongType = await t.request('PATCH', path, { json: { custom_questions: ['a'] } });
    expect(wrongType.status).toBe(422);
    const unknown = await t.request('PATCH', path, {
      json: { custom_questions: { how_did_you_hear_about_us: 'TV', favourite_colour: 'red' } },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors.custom_questions[0]).toMatch(/favourite_colour/);
    const readOnly = await t.request('PATCH', path, {
      json: { custom_questions: { utm_source: 'bing' } },
    });
    expect(readOnly.status).toBe(422);
    expect(readOnly.body.errors.custom_questions[0]).toMatch(/utm_source is read-only/);
    const values = (await t.request('GET', path)).body.data.map((d: any) => d.attributes);
    expect(values.find((v: any) => v.column_name === 'utm_source').value).toBe('google');
    expect(values.find((v: any) => v.column_name === 'how_did_you_hear_about_us').value).not.toBe(
      'TV',
    );
  });

  it('answers 404 for an unknown lead, 403 outside permission, 400 for malformed JSON', async () => {
    expect((await t.request('GET', '/api/v1/leads/999999/booking_questions')).status).toBe(404);
    expect(
      (
        await t.request('PATCH', '/api/v1/leads/999999/booking_questions', {
          json: { custom_questions: {} },
        })
      ).status,
    ).toBe(404);
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    const denied = await t.request('PATCH', `/api/v1/leads/${leadId}/booking_questions`, {
      key,
      json: { custom_questions: {} },
    });
    expect(denied.status).toBe(403);
    const malformed = await t.request('PATCH', `/api/v1/leads/${leadId}/booking_questions`, {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
  });
});

describe('reach limit and page size', () => {
  let s: TestSandbox;
  beforeAll(async () => {
    s = await startTestSandbox({ reachLimit: 50, maxPer: 20 });
    for (let i = 0; i < 120; i += 1) {
      const res = await s.request('POST', '/api/v1/leads', {
        json: { email: `reach${i}@example.com` },
      });
      expect(res.status).toBe(200);
    }
  });
  afterAll(async () => {
    expect(s.internalErrors).toEqual([]);
    await s.close();
  });

  it('returns nothing past the reach limit while total_count stays the full count', async () => {
    const straddle = await s.request('GET', '/api/v1/leads', { query: { page: 3, per: 20 } });
    expect(straddle.body.data).toHaveLength(10);
    expect(straddle.body.meta.total_count).toBe(120);
    const past = await s.request('GET', '/api/v1/leads', { query: { page: 4, per: 20 } });
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);
    expect(past.body.meta).toMatchObject({ total_count: 120, page: 4, total_pages: 6 });
  });

  it('clamps per to the maximum and says so in meta.per_page', async () => {
    const res = await s.request('GET', '/api/v1/leads', { query: { per: 50 } });
    expect(res.body.meta.per_page).toBe(20);
    expect(res.body.data).toHaveLength(20);
  });
});

describe('leads written straight into the store', () => {
  it('are listed and searchable even when written before the first list', async () => {
    const s = await startTestSandbox();
    try {
      s.sb.ctx.records.insert('lead', s.sb.businessId, (id) => ({
        id,
        email: 'direct@example.com',
        first_name: 'Direct',
        origin: 'Lead Form',
      }));
      const res = await s.request('GET', '/api/v1/leads', {
        query: { text: 'direct', origin: 'Lead Form' },
      });
      expect(res.status).toBe(200);
      expect(res.body.meta.total_count).toBe(1);
      expect(res.body.data[0].attributes).toMatchObject({
        first_name: 'Direct',
        last_name: null,
        spam: false,
        custom_fields: [],
      });
      expect(s.internalErrors).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
