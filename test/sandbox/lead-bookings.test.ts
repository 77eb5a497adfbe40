import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLead } from '../../sandbox/resources/leads.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
let staffId: number;
let packages: { id: number; name: string; group: string; length: number }[];
let backdrops: number[];
let addOnId: number;

const OFFSET_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/;

beforeAll(async () => {
  t = await startTestSandbox();
  staffId = t.sb.identity.createUser({
    businessId: t.sb.businessId,
    name: 'Sam Staff',
    email: 'sam@sandbox.example',
    role: 'staff',
    permissions: ['lead_read'],
  }).id;
  packages = t.sb.ctx.records.list('package', t.sb.businessId).records.map((r) => ({
    id: r.id,
    name: r.attrs.name as string,
    group: r.attrs.package_group_name as string,
    length: r.attrs.default_length_in_minutes as number,
  }));
  backdrops = t.sb.ctx.records
    .list('photobooth_background', t.sb.businessId)
    .records.map((r) => r.id);
  addOnId = t.sb.ctx.records.insert('add_on', t.sb.businessId, (id) => ({
    id,
    name: 'Props',
    price_cents: 5000,
  })).id;
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

function pkg(i: number) {
  const p = packages[i];
  if (!p) throw new Error(`no package ${i}`);
  return p;
}

async function newLead(json: Record<string, unknown>) {
  const res = await t.request('POST', '/api/v1/leads', { json });
  expect(res.status).toBe(200);
  return res.body.data as { id: string; attributes: any; relationships: any };
}

async function primaryBookingId(json: Record<string, unknown>): Promise<string> {
  const lead = await newLead(json);
  return lead.relationships.lead_bookings.data[0].id as string;
}

describe('GET /api/v1/lead_bookings/{id}', () => {
  it('returns a lead_booking with the spec attributes and relationships', async () => {
    const id = await primaryBookingId({
      email: 'one@example.com',
      first_name: 'Una',
      event_date: '2026-06-13',
      event_time: '2:00 PM',
      package_id: pkg(0).id,
      staff_id: staffId,
    });
    const res = await t.request('GET', `/api/v1/lead_bookings/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ status: 'ok' });
    const { data } = res.body;
    expect(data).toMatchObject({ id, type: 'lead_booking' });
    expect(data.attributes).toMatchObject({
      id: Number(id),
      lead_id: expect.any(Number),
      event_type_id: pkg(0).id,
      starts_at: expect.stringMatching(OFFSET_ISO),
      ends_at: expect.stringMatching(OFFSET_ISO),
      staff_id: staffId,
      staff_name: 'Sam Staff',
      name: pkg(0).name,
      service_name: 'Photo Booth',
      package_group_name: pkg(0).group,
      title: `Una - ${pkg(0).name}`,
      brand_name: 'Sandbox Photo Booths',
      date_mode: 'date_time',
      length_in_minutes: pkg(0).length,
      length_in_days: null,
      units: null,
      package_unit_range_id: null,
      event_type_unit_range: null,
      formatted_date_range: 'Sat, Jun 13, 2026',
      formatted_time_range: expect.stringMatching(/^2:00 PM - \d+:\d\d [AP]M$/),
      formatted_units: '',
      preview_image: expect.any(String),
    });
    expect(data.attributes.starts_at).toBe('2026-06-13T14:00:00-04:00');
    expect(data.relationships).toEqual({
      lead_add_ons: { data: [] },
      lead_extras: { data: [] },
      lead_booking_extra_categories: { data: [] },
      photobooth_background: { data: null },
    });
  });

  it("answers 404 for unknown and other businesses' bookings, 400 for an unknown include", async () => {
    expect((await t.request('GET', '/api/v1/lead_bookings/999999')).status).toBe(404);
    const other = t.sb.identity.createBusiness({ name: 'Elsewhere' });
    const lead = createLead(t.sb.ctx, other.id, {
      email: 'x@example.com',
      event_date: '2026-01-01',
    });
    const foreign = t.sb.ctx.records.children('lead_booking', lead.id)[0];
    expect((await t.request('GET', `/api/v1/lead_bookings/${foreign?.id}`)).status).toBe(404);
    const id = await primaryBookingId({ email: 'inc@example.com', event_date: '2026-01-02' });
    const bad = await t.request('GET', `/api/v1/lead_bookings/${id}`, {
      query: { include: 'lead_add_ons,nope' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.reason).toBe('invalid_parameter');
    expect(bad.body.message).toMatch(/photobooth_background/);
  });
});

describe('PATCH /api/v1/lead_bookings/{id}', () => {
  it('changes only the fields sent, and the lead follows its primary booking', async () => {
    const lead = await newLead({
      email: 'update@example.com',
      event_date: '2026-06-13',
      event_time: '2:00 PM',
      length_in_minutes: 120,
      package_id: pkg(0).id,
      staff_id: staffId,
    });
    const id = lead.relationships.lead_bookings.data[0].id;
    const path = `/api/v1/lead_bookings/${id}`;

    const timeOnly = await t.request('PATCH', path, { json: { starts_at_time: '07:30 PM' } });
    expect(timeOnly.status).toBe(200);
    expect(timeOnly.body.data.attributes).toMatchObject({
      starts_at: '2026-06-13T19:30:00-04:00',
      ends_at: '2026-06-13T21:30:00-04:00',
      length_in_minutes: 120,
      event_type_id: pkg(0).id,
      staff_id: staffId,
    });

    const moved = await t.request('PATCH', path, {
      json: {
        starts_at_date: '2026-12-31',
        event_type_id: pkg(2).id,
        length_in_minutes: 60,
        units: 3,
        staff_id: '',
      },
    });
    expect(moved.body.data.attributes).toMatchObject({
      starts_at: '2026-12-31T19:30:00-05:00',
      ends_at: '2026-12-31T20:30:00-05:00',
      event_type_id: pkg(2).id,
      name: pkg(2).name,
      package_group_name: pkg(2).group,
      units: 3,
      formatted_units: '3 units',
      staff_id: null,
      staff_name: null,
    });

    const leadNow = await t.request('GET', `/api/v1/leads/${lead.id}`);
    expect(leadNow.body.data.attributes).toMatchObject({
      event_date: '2026-12-31',
      event_time: '7:30 PM',
      length_in_minutes: 60,
      package_name: pkg(2).name,
      event_type_id: pkg(2).id,
    });
    const listed = await t.request('GET', '/api/v1/leads', {
      query: { email: 'update@example.com' },
    });
    expect(listed.body.data[0].attributes.event_date).toBe('2026-12-31');
  });

  it('answers 422 for ill-typed or unknown fields and changes nothing', async () => {
    const id = await primaryBookingId({
      email: 'bad-update@example.com',
      event_date: '2026-03-03',
    });
    const path = `/api/v1/lead_bookings/${id}`;
    const res = await t.request('PATCH', path, {
      json: {
        event_type_id: 999_999,
        event_category_id: 'one',
        package_group_id: 999_999,
        starts_at_date: '03-04-2026',
        starts_at_time: '25:00',
        length_in_minutes: -5,
        staff_id: 999_999,
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      event_type_id: ['Event type must exist'],
      event_category_id: ['Event category must be an integer greater than or equal to 1'],
      package_group_id: ['Package group must exist'],
      starts_at_date: [expect.stringMatching(/^Starts at date must be a date/)],
      starts_at_time: [expect.stringMatching(/^Starts at time must be a time/)],
      length_in_minutes: ['Length in minutes must be greater than or equal to 1'],
      staff_id: ['Staff must exist'],
    });
    const after = await t.request('GET', path);
    expect(after.body.data.attributes.starts_at).toBe('2026-03-03T00:00:00-05:00');
  });

  it('answers 404, 403 and 400 (malformed JSON) in the general shape', async () => {
    expect(
      (await t.request('PATCH', '/api/v1/lead_bookings/999999', { json: { units: 1 } })).status,
    ).toBe(404);
    const id = await primaryBookingId({ email: 'perm@example.com', event_date: '2026-03-03' });
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    const denied = await t.request('PATCH', `/api/v1/lead_bookings/${id}`, {
      key,
      json: { units: 1 },
    });
    expect(denied.status).toBe(403);
    const malformed = await t.request('PATCH', `/api/v1/lead_bookings/${id}`, {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.meta).toEqual({ status: 'error' });
  });
});

describe('adding and removing bookings', () => {
  it('adds a booking to a lead; removing the primary promotes the next', async () => {
    const lead = await newLead({
      email: 'multi@example.com',
      event_date: '2026-05-01',
      package_id: pkg(0).id,
    });
    const firstId = lead.relationships.lead_bookings.data[0].id;
    const added = await t.request('POST', `/api/v1/leads/${lead.id}/lead_bookings`, {
      json: {
        event_type_id: pkg(1).id,
        starts_at_date: '2026-05-02',
        starts_at_time: '10:00 AM',
        staff_id: staffId,
      },
    });
    expect(added.status).toBe(200);
    expect(added.body.data.type).toBe('lead_booking');
    expect(added.body.data.attributes).toMatchObject({
      lead_id: Number(lead.id),
      event_type_id: pkg(1).id,
      length_in_minutes: pkg(1).length,
      staff_name: 'Sam Staff',
      starts_at: '2026-05-02T10:00:00-04:00',
    });
    const refs = (await t.request('GET', `/api/v1/leads/${lead.id}`)).body.data.relationships
      .lead_bookings.data;
    expect(refs.map((r: any) => r.id)).toEqual([firstId, added.body.data.id]);

    const removed = await t.request('DELETE', `/api/v1/lead_bookings/${firstId}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ meta: { status: 'ok' } });
    expect((await t.request('GET', `/api/v1/lead_bookings/${firstId}`)).status).toBe(404);
    expect((await t.request('DELETE', `/api/v1/lead_bookings/${firstId}`)).status).toBe(404);
    const after = (await t.request('GET', `/api/v1/leads/${lead.id}`)).body.data;
    expect(after.relationships.lead_bookings.data.map((r: any) => r.id)).toEqual([
      added.body.data.id,
    ]);
    expect(after.attributes).toMatchObject({ event_date: '2026-05-02', event_time: '10:00 AM' });
  });

  it('answers 404 for an unknown lead and 422 for bad fields when adding', async () => {
    const missing = await t.request('POST', '/api/v1/leads/999999/lead_bookings', { json: {} });
    expect(missing.status).toBe(404);
    const lead = await newLead({ email: 'add-bad@example.com' });
    const bad = await t.request('POST', `/api/v1/leads/${lead.id}/lead_bookings`, {
      json: { event_type_id: '5', length_in_days: 0 },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual({
      event_type_id: ['Event type must be an integer greater than or equal to 1'],
      length_in_days: ['Length in days must be greater than or equal to 1'],
    });
  });

  it('requires lead_write to remove or add', async () => {
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    const id = await primaryBookingId({ email: 'rm-perm@example.com', event_date: '2026-03-03' });
    expect((await t.request('DELETE', `/api/v1/lead_bookings/${id}`, { key })).status).toBe(403);
    expect(
      (await t.request('POST', '/api/v1/leads/1/lead_bookings', { key, json: {} })).status,
    ).toBe(403);
  });
});

describe('add-ons and backdrops', () => {
  it('adds an add-on (quantity defaults to 1) and returns the record in data', async () => {
    const id = await primaryBookingId({ email: 'addon@example.com', event_date: '2026-04-04' });
    const path = `/api/v1/lead_bookings/${id}/lead_add_ons`;
    const res = await t.request('POST', path, { json: { add_on_id: addOnId } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      type: 'lead_add_on',
      attributes: {
        lead_booking_id: Number(id),
        add_on_id: addOnId,
        name: 'Props',
        quantity: 1,
        price: '50.00',
        price_cents: 5000,
        price_currency: 'USD',
        price_formatted: '$50.00',
      },
      relationships: { add_on: { data: { id: String(addOnId), type: 'add_on' } } },
    });
    const again = await t.request('POST', path, { json: { add_on_id: addOnId, quantity: 2 } });
    expect(again.body.data.id).toBe(res.body.data.id);
    expect(again.body.data.attributes.quantity).toBe(3);

    const withInclude = await t.request('GET', `/api/v1/lead_bookings/${id}`, {
      query: { include: 'lead_add_ons' },
    });
    expect(withInclude.body.data.relationships.lead_add_ons.data).toEqual([
      { id: res.body.data.id, type: 'lead_add_on' },
    ]);
    expect(withInclude.body.included).toEqual([
      expect.objectContaining({ type: 'lead_add_on', id: res.body.data.id }),
    ]);
  });

  it("names each booking's own add-ons on list pages, which read them for all at once", async () => {
    const withAddOns = await newLead({ email: 'many-a@example.com', event_date: '2026-05-05' });
    const without = await newLead({ email: 'many-b@example.com', event_date: '2026-05-06' });
    const bookingA = withAddOns.relationships.lead_bookings.data[0].id as string;
    const bookingB = without.relationships.lead_bookings.data[0].id as string;
    const added = await t.request('POST', `/api/v1/lead_bookings/${bookingA}/lead_add_ons`, {
      json: { add_on_id: addOnId },
    });
    const addOn = [{ id: added.body.data.id, type: 'lead_add_on' }];
    type Listed = { id: string; relationships: { lead_add_ons: { data: unknown[] } } };
    const addOnsOf = (items: Listed[], id: string) =>
      items.find((booking) => booking.id === id)?.relationships.lead_add_ons.data;

    const list = await t.request('GET', '/api/v1/lead_bookings', { query: { per: 100 } });
    expect(addOnsOf(list.body.data, bookingA)).toEqual(addOn);
    expect(addOnsOf(list.body.data, bookingB)).toEqual([]);

    const leads = await t.request('GET', '/api/v1/leads', {
      query: { per: 100, include: 'lead_bookings' },
    });
    expect(addOnsOf(leads.body.included, bookingA)).toEqual(addOn);
    expect(addOnsOf(leads.body.included, bookingB)).toEqual([]);

    const one = await t.request('GET', `/api/v1/leads/${withAddOns.id}`, {
      query: { include: 'lead_bookings' },
    });
    expect(addOnsOf(one.body.included, bookingA)).toEqual(addOn);
  });

  it('names and sideloads extras and their categories, alone and on list pages', async () => {
    const id = Number(
      await primaryBookingId({ email: 'extras@example.com', event_date: '2026-07-07' }),
    );
    const other = Number(
      await primaryBookingId({ email: 'no-extras@example.com', event_date: '2026-07-08' }),
    );
    const records = t.sb.ctx.records;
    const category = records.insert(
      'lead_booking_extra_category',
      t.sb.businessId,
      (cid) => ({ id: cid, name: 'Upgrades' }),
      { parentId: id },
    ).id;
    const extra = (name: string, categoryId: number | null) =>
      records.insert(
        'lead_extra',
        t.sb.businessId,
        (eid) => ({ id: eid, name, lead_booking_extra_category_id: categoryId }),
        { parentId: id },
      ).id;
    const inCategory = extra('Guest book', category);
    const loose = extra('Parking', null);
    const refs = (type: string, ids: number[]) => ids.map((n) => ({ id: String(n), type }));
    const include = 'lead_extras,lead_booking_extra_categories.lead_extras';
    type Body = { data: any; included: any[] };
    const check = (body: Body, booking: any) => {
      expect(booking.relationships.lead_extras.data).toEqual(
        refs('lead_extra', [inCategory, loose]),
      );
      expect(booking.relationships.lead_booking_extra_categories.data).toEqual(
        refs('lead_booking_extra_category', [category]),
      );
      const sideloaded = body.included.find(
        (i) => i.type === 'lead_booking_extra_category' && i.id === String(category),
      );
      expect(sideloaded.relationships.lead_extras.data).toEqual(refs('lead_extra', [inCategory]));
      expect(
        body.included
          .filter((i) => i.type === 'lead_extra')
          .map((i) => Number(i.id))
          .sort((a, b) => a - b),
      ).toEqual([inCategory, loose]);
    };
    const one = (await t.request('GET', `/api/v1/lead_bookings/${id}`, { query: { include } }))
      .body as Body;
    check(one, one.data);
    const page = (await t.request('GET', '/api/v1/lead_bookings', { query: { per: 100, include } }))
      .body as Body;
    check(
      page,
      page.data.find((b: any) => b.id === String(id)),
    );
    const without = page.data.find((b: any) => b.id === String(other));
    expect(without.relationships.lead_extras.data).toEqual([]);
    expect(without.relationships.lead_booking_extra_categories.data).toEqual([]);
  });

  it('hides add-on prices without a pricing permission', async () => {
    const id = await primaryBookingId({ email: 'noprice@example.com', event_date: '2026-04-04' });
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_write'] });
    const res = await t.request('POST', `/api/v1/lead_bookings/${id}/lead_add_ons`, {
      key,
      json: { add_on_id: addOnId },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      price: null,
      price_cents: null,
      price_currency: null,
      price_formatted: null,
    });
  });

  it('answers 422 for a missing, ill-typed or unknown add-on and a bad quantity', async () => {
    const id = await primaryBookingId({ email: 'addon-bad@example.com', event_date: '2026-04-04' });
    const path = `/api/v1/lead_bookings/${id}/lead_add_ons`;
    const missing = await t.request('POST', path, { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({ add_on_id: ["Add on can't be blank"] });
    const typed = await t.request('POST', path, { json: { add_on_id: 'props', quantity: 0 } });
    expect(typed.body.errors).toEqual({
      add_on_id: ['Add on must be an integer greater than or equal to 1'],
      quantity: ['Quantity must be greater than or equal to 1'],
    });
    const unknown = await t.request('POST', path, { json: { add_on_id: 999_999 } });
    expect(unknown.body.errors).toEqual({ add_on_id: ['Add on must exist'] });
    expect(
      (
        await t.request('POST', '/api/v1/lead_bookings/999999/lead_add_ons', {
          json: { add_on_id: addOnId },
        })
      ).status,
    ).toBe(404);
  });

  it('sets, replaces and removes the backdrop', async () => {
    const id = await primaryBookingId({ email: 'backdrop@example.com', event_date: '2026-04-04' });
    const path = `/api/v1/lead_bookings/${id}/photobooth_background`;
    const [first, second] = backdrops;
    const set = await t.request('PUT', path, { json: { photobooth_background_id: first } });
    expect(set.status).toBe(200);
    expect(set.body.data.relationships.photobooth_background).toEqual({
      data: { id: String(first), type: 'photobooth_background' },
    });
    expect(set.body.included).toEqual([
      expect.objectContaining({ id: String(first), type: 'photobooth_background' }),
    ]);
    const replaced = await t.request('PUT', path, { json: { photobooth_background_id: second } });
    expect(replaced.body.data.relationships.photobooth_background.data.id).toBe(String(second));
    const included = await t.request('GET', `/api/v1/lead_bookings/${id}`, {
      query: { include: 'photobooth_background' },
    });
    expect(included.body.included.map((i: any) => i.id)).toEqual([String(second)]);

    const removed = await t.request('DELETE', path);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ meta: { status: 'ok' } });
    const after = await t.request('GET', `/api/v1/lead_bookings/${id}`);
    expect(after.body.data.relationships.photobooth_background).toEqual({ data: null });
  });

  it('answers 422 for a missing or unknown backdrop and 403 without lead_write', async () => {
    const id = await primaryBookingId({ email: 'bd-bad@example.com', event_date: '2026-04-04' });
    const path = `/api/v1/lead_bookings/${id}/photobooth_background`;
    const missing = await t.request('PUT', path, { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({
      photobooth_background_id: ["Photobooth background can't be blank"],
    });
    const unknown = await t.request('PUT', path, { json: { photobooth_background_id: 999_999 } });
    expect(unknown.body.errors).toEqual({
      photobooth_background_id: ['Photobooth background must exist'],
    });
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] });
    expect((await t.request('DELETE', path, { key })).status).toBe(403);
    expect(
      (await t.request('PUT', path, { key, json: { photobooth_background_id: backdrops[0] } }))
        .status,
    ).toBe(403);
  });
});

describe('GET /api/v1/lead_bookings', () => {
  const dates = ['2030-01-10', '2030-01-11', '2030-01-11', '2030-01-12', '2030-02-01'];
  beforeAll(async () => {
    for (const [i, date] of dates.entries()) {
      await newLead({
        email: `window${i}@example.com`,
        event_date: date,
        event_time: '11:30 PM',
        package_id: pkg(0).id,
      });
    }
  });

  async function list(query: Record<string, string | number>) {
    const res = await t.request('GET', '/api/v1/lead_bookings', { query });
    expect(res.status).toBe(200);
    return res.body;
  }

  it('filters by event date in the business time zone, both ends inclusive', async () => {
    const body = await list({ event_date_start: '2030-01-11', event_date_end: '2030-01-12' });
    expect(body.meta.total_count).toBe(3);
    expect(body.data.map((d: any) => d.attributes.starts_at.slice(0, 10))).toEqual([
      '2030-01-11',
      '2030-01-11',
      '2030-01-12',
    ]);
    expect((await list({ event_date_start: '2030-01-12' })).meta.total_count).toBe(2);
    expect(
      (await list({ event_date_start: '2030-01-01', event_date_end: '2030-01-10' })).meta
        .total_count,
    ).toBe(1);
  });

  it('pages with the list meta', async () => {
    const query = { event_date_start: '2030-01-01', event_date_end: '2030-12-31', per: 2 };
    const pages = await Promise.all([1, 2, 3].map((page) => list({ ...query, page })));
    expect(pages[0].meta).toMatchObject({ total_count: 5, per_page: 2, page: 1, total_pages: 3 });
    const ids = pages.flatMap((p) => p.data.map((d: any) => Number(d.id)));
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('filters by brand', async () => {
    const some = await list({ event_date_start: '2030-01-01' });
    const brandId = (await t.request('GET', `/api/v1/leads/${some.data[0].attributes.lead_id}`))
      .body.data.attributes.brand_id;
    expect(
      (await list({ event_date_start: '2030-01-01', brand_id: brandId })).meta.total_count,
    ).toBe(5);
    expect(
      (await list({ event_date_start: '2030-01-01', brand_id: brandId + 1000 })).meta.total_count,
    ).toBe(0);
  });

  it('sideloads included records', async () => {
    const body = await list({ event_date_start: '2030-02-01' });
    const id = body.data[0].id;
    await t.request('PUT', `/api/v1/lead_bookings/${id}/photobooth_background`, {
      json: { photobooth_background_id: backdrops[0] },
    });
    await t.request('POST', `/api/v1/lead_bookings/${id}/lead_add_ons`, {
      json: { add_on_id: addOnId },
    });
    const included = await list({
      event_date_start: '2030-02-01',
      include:
        'lead_add_ons,lead_extras,lead_booking_extra_categories,lead_booking_extra_categories.lead_extras,photobooth_background',
    });
    expect(included.included.map((i: any) => i.type).sort()).toEqual([
      'lead_add_on',
      'photobooth_background',
    ]);
  });

  it('answers 400 invalid_parameter for malformed dates and unknown includes', async () => {
    for (const query of [
      { event_date_start: '01/11/2030' },
      { event_date_end: '2030-13-01' },
      { include: 'lead' },
      { brand_id: 'x' },
    ]) {
      const res = await t.request('GET', '/api/v1/lead_bookings', { query });
      expect(res.status).toBe(400);
      expect(res.body.reason).toBe('invalid_parameter');
    }
  });

  it('answers 403 without lead_read', async () => {
    const { key } = t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_write'] });
    expect((await t.request('GET', '/api/v1/lead_bookings', { key })).status).toBe(403);
  });
});
