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

const MONEY = (name: string) => ({
  [name]: expect.stringMatching(/^\d+\.\d{2}$/),
  [`${name}_cents`]: expect.any(Number),
  [`${name}_currency`]: 'USD',
  [`${name}_formatted`]: expect.stringMatching(/^\$/),
});

async function createCategory(name: string): Promise<number> {
  const res = await t.request('POST', '/api/v1/add_on_categories', { json: { name } });
  expect(res.status).toBe(200);
  return res.body.data.attributes.id as number;
}

async function createAddOn(body: Record<string, unknown>): Promise<any> {
  const res = await t.request('POST', '/api/v1/add_ons', { json: body });
  expect(res.status).toBe(200);
  return res.body.data;
}

function keyWith(permissions: string[]): string {
  return t.sb.identity.createKey({ userId: t.sb.userId, permissions }).key;
}

describe('add-on categories', () => {
  it('creates a category at the end, as add_on_category with string id and integer attributes.id', async () => {
    const first = await t.request('POST', '/api/v1/add_on_categories', { json: { name: 'Props' } });
    const second = await t.request('POST', '/api/v1/add_on_categories', {
      json: { name: 'Prints' },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      meta: { status: 'ok' },
      data: {
        id: expect.any(String),
        type: 'add_on_category',
        attributes: { id: Number(first.body.data.id), name: 'Props', position: expect.any(Number) },
        relationships: {},
      },
    });
    expect(second.body.data.attributes.position).toBe(first.body.data.attributes.position + 1);
  });

  it('rejects a missing or ill-typed name with 422 per field, and malformed JSON with 400', async () => {
    const missing = await t.request('POST', '/api/v1/add_on_categories', { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      meta: { status: 'error' },
      errors: { name: ["Name can't be blank"] },
    });
    const wrong = await t.request('POST', '/api/v1/add_on_categories', { json: { name: 42 } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors.name).toEqual(['Name must be a string']);
    const bad = await t.request('POST', '/api/v1/add_on_categories', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      meta: { status: 'error' },
      status: 'bad_request',
      reason: expect.any(String),
      message: expect.any(String),
    });
  });

  it('answers 403 outside offerings_read / offerings_write', async () => {
    const readOnly = keyWith(['offerings_read']);
    expect(
      (await t.request('POST', '/api/v1/add_on_categories', { key: readOnly, json: { name: 'X' } }))
        .status,
    ).toBe(403);
    expect((await t.request('GET', '/api/v1/add_on_categories', { key: readOnly })).status).toBe(
      200,
    );
    const none = keyWith(['lead_read']);
    const res = await t.request('GET', '/api/v1/add_on_categories', { key: none });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('permission_denied');
    expect((await t.request('GET', '/api/v1/add_ons', { key: none })).status).toBe(403);
    expect(
      (
        await t.request('PUT', '/api/v1/add_on_categories/1', {
          key: readOnly,
          json: { name: 'Y' },
        })
      ).status,
    ).toBe(403);
    expect(
      (await t.request('DELETE', '/api/v1/add_on_categories/1', { key: readOnly })).status,
    ).toBe(403);
  });

  it('lists active categories by position with list meta, and sideloads add_ons on include', async () => {
    const cat = await createCategory('Lighting');
    const addOn = await createAddOn({
      add_on_category_id: cat,
      name: 'Uplights',
      description: 'Eight LED uplights',
      price: 120,
    });
    const plain = await t.request('GET', '/api/v1/add_on_categories');
    expect(plain.status).toBe(200);
    expect(plain.body.meta).toMatchObject({
      status: 'ok',
      total_count: expect.any(Number),
      per_page: 25,
      page: 1,
      total_pages: expect.any(Number),
    });
    const positions = plain.body.data.map((d: any) => d.attributes.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(plain.body.included).toBeUndefined();
    expect(plain.body.data[0].relationships).toEqual({});

    const withAddOns = await t.request('GET', '/api/v1/add_on_categories', {
      query: { include: 'add_ons' },
    });
    const lighting = withAddOns.body.data.find((d: any) => d.attributes.id === cat);
    expect(lighting.relationships.add_ons).toEqual({ data: [{ id: addOn.id, type: 'add_on' }] });
    expect(withAddOns.body.included).toContainEqual(
      expect.objectContaining({ id: addOn.id, type: 'add_on' }),
    );

    const badInclude = await t.request('GET', '/api/v1/add_on_categories', {
      query: { include: 'nope' },
    });
    expect(badInclude.status).toBe(400);
    expect(badInclude.body.reason).toBe('invalid_parameter');
  });

  it('fetches one category with include, 404 for unknown ids and 400 for non-integer ids', async () => {
    const cat = await createCategory('Guest book');
    const res = await t.request('GET', `/api/v1/add_on_categories/${cat}`, {
      query: { include: 'add_ons' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: String(cat),
      type: 'add_on_category',
      attributes: { id: cat, name: 'Guest book' },
      relationships: { add_ons: { data: [] } },
    });
    const missing = await t.request('GET', '/api/v1/add_on_categories/999999');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ meta: { status: 'error' }, status: 'not_found' });
    expect((await t.request('GET', '/api/v1/add_on_categories/abc')).status).toBe(400);
  });

  it('renames with PUT (name only) and validates the name', async () => {
    const cat = await createCategory('Old name');
    const res = await t.request('PUT', `/api/v1/add_on_categories/${cat}`, {
      json: { name: 'New name', position: 99 },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes.name).toBe('New name');
    expect(res.body.data.attributes.position).not.toBe(99);
    const blank = await t.request('PUT', `/api/v1/add_on_categories/${cat}`, {
      json: { name: '  ' },
    });
    expect(blank.status).toBe(422);
    expect(blank.body.errors).toEqual({ name: ["Name can't be blank"] });
    expect(
      (await t.request('PUT', '/api/v1/add_on_categories/999999', { json: { name: 'x' } })).status,
    ).toBe(404);
    const bad = await t.request('PUT', `/api/v1/add_on_categories/${cat}`, {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
  });

  it('deletes a category with all its add-ons; bookings holding them are unaffected', async () => {
    const cat = await createCategory('Seasonal');
    const keep = await createCategory('Keepers');
    const gone = await createAddOn({
      add_on_category_id: cat,
      name: 'Snow machine',
      description: 'd',
    });
    const stays = await createAddOn({
      add_on_category_id: keep,
      name: 'Red carpet',
      description: 'd',
    });
    const pkg = t.sb.ctx.records
      .list('package', t.sb.businessId)
      .records.find((r) => r.attrs.name === 'Classic Booth');
    const event = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'None',
        quick_event_bookings_attributes: {
          '0': {
            event_type_id: pkg?.id,
            starts_at_date: '03-14-2031',
            starts_at_time: '5:00 PM',
            add_on_ids: [Number(gone.id)],
          },
        },
      },
    });
    expect(event.status).toBe(200);

    const del = await t.request('DELETE', `/api/v1/add_on_categories/${cat}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ meta: { status: 'ok' } });
    expect((await t.request('GET', `/api/v1/add_on_categories/${cat}`)).status).toBe(404);
    expect((await t.request('DELETE', `/api/v1/add_on_categories/${cat}`)).status).toBe(404);
    const cats = await t.request('GET', '/api/v1/add_on_categories', { query: { per: 100 } });
    expect(cats.body.data.map((d: any) => d.attributes.id)).not.toContain(cat);
    const addOns = await t.request('GET', '/api/v1/add_ons', { query: { per: 100 } });
    const ids = addOns.body.data.map((d: any) => d.id);
    expect(ids).not.toContain(gone.id);
    expect(ids).toContain(stays.id);

    const full = await t.request('GET', `/api/v1/events/${event.body.data.id}`);
    expect(full.body.data.attributes.add_on_names).toBe('Snow machine');
    const bookingId = full.body.data.relationships.event_bookings.data[0].id;
    const booking = await t.request('GET', `/api/v1/event_bookings/${bookingId}`);
    expect(booking.body.data.relationships.event_add_ons.data).toHaveLength(1);
    // A new booking can no longer pick the deleted add-on.
    const again = await t.request('POST', '/api/v1/events', {
      json: {
        contact_type: 'None',
        quick_event_bookings_attributes: {
          '0': {
            event_type_id: pkg?.id,
            starts_at_date: '03-15-2031',
            add_on_ids: [Number(gone.id)],
          },
        },
      },
    });
    expect(again.status).toBe(422);
    expect(again.body.errors['quick_event_bookings_attributes.0.add_on_ids']).toBeDefined();
  });
});

describe('add-ons', () => {
  it('creates an add-on with the spec attributes, appended to the end of its category', async () => {
    const cat = await createCategory('Extras');
    const first = await createAddOn({
      add_on_category_id: cat,
      name: 'Scrapbook',
      description: 'A guest scrapbook',
    });
    expect(first.type).toBe('add_on');
    expect(first.id).toBe(String(first.attributes.id));
    expect(first.attributes).toEqual({
      id: expect.any(Number),
      name: 'Scrapbook',
      description: 'A guest scrapbook',
      position: 1,
      price_method: 'flat_rate',
      third_party_video_id: null,
      ...MONEY('price'),
      ...MONEY('hourly_price'),
      ...MONEY('daily_price'),
      primary_image: {
        url: expect.any(String),
        content_type: expect.any(String),
        video_variant: expect.any(String),
      },
      additional_images: [],
    });
    // Defaults to a flat rate of 0.
    expect(first.attributes.price).toBe('0.00');
    expect(first.attributes.price_cents).toBe(0);
    expect(first.relationships).toEqual({
      add_on_category: { data: { id: String(cat), type: 'add_on_category' } },
    });

    const second = await createAddOn({
      add_on_category_id: cat,
      name: 'Attendant',
      description: 'An extra attendant',
      price_method: 'hourly',
      hourly_price: '45.50',
    });
    expect(second.attributes.position).toBe(2);
    expect(second.attributes).toMatchObject({
      price_method: 'hourly',
      hourly_price: '45.50',
      hourly_price_cents: 4550,
      hourly_price_formatted: '$45.50',
      price_cents: 0,
    });
    const flat = await createAddOn({
      add_on_category_id: String(cat),
      name: 'Backdrop upgrade',
      description: 'd',
      price: 1250.5,
    });
    expect(flat.attributes).toMatchObject({ price: '1250.50', price_formatted: '$1,250.50' });
  });

  it('answers 422 per missing, unknown or ill-typed field', async () => {
    const missing = await t.request('POST', '/api/v1/add_ons', { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      meta: { status: 'error' },
      errors: {
        add_on_category_id: ["Add on category can't be blank"],
        name: ["Name can't be blank"],
        description: ["Description can't be blank"],
      },
    });
    const unknown = await t.request('POST', '/api/v1/add_ons', {
      json: { add_on_category_id: 999999, name: 'x', description: 'y' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual({ add_on_category_id: ['Add on category must exist'] });
    const cat = await createCategory('Typed');
    const wrong = await t.request('POST', '/api/v1/add_ons', {
      json: {
        add_on_category_id: 'abc',
        name: ['x'],
        description: 'y',
        price_method: 'per_guest',
        price: 'ten',
      },
    });
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.errors).sort()).toEqual(
      ['add_on_category_id', 'name', 'price', 'price_method'].sort(),
    );
    expect(wrong.body.errors.price).toEqual(['Price is not a number']);
    const negative = await t.request('POST', '/api/v1/add_ons', {
      json: { add_on_category_id: cat, name: 'x', description: 'y', price: -1 },
    });
    expect(negative.status).toBe(422);
    expect(negative.body.errors.price).toEqual(['Price must be greater than or equal to 0']);
    const bad = await t.request('POST', '/api/v1/add_ons', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    const readOnly = keyWith(['offerings_read']);
    expect(
      (
        await t.request('POST', '/api/v1/add_ons', {
          key: readOnly,
          json: { add_on_category_id: cat, name: 'x', description: 'y' },
        })
      ).status,
    ).toBe(403);
  });

  it('filters by text, widget visibility and categories, and orders by name or price', async () => {
    const a = await createCategory('Filter A');
    const b = await createCategory('Filter B');
    const c = await createCategory('Filter C');
    await createAddOn({ add_on_category_id: a, name: 'Zebra props', description: 'd', price: 5 });
    await createAddOn({
      add_on_category_id: a,
      name: 'Alpaca props',
      description: 'd',
      price: 50,
      widget_visible: false,
    });
    await createAddOn({ add_on_category_id: b, name: 'Mid props', description: 'd', price: 20 });
    await createAddOn({ add_on_category_id: c, name: 'Other thing', description: 'd' });

    const names = async (query: Record<string, string | number | (string | number)[]>) => {
      const res = await t.request('GET', '/api/v1/add_ons', { query: { per: 100, ...query } });
      expect(res.status).toBe(200);
      return res.body.data.map((d: any) => d.attributes.name as string);
    };
    expect(await names({ 'category_ids[]': [a, b], order: 'name' })).toEqual([
      'Alpaca props',
      'Mid props',
      'Zebra props',
    ]);
    expect(await names({ 'category_ids[]': [a, b], order: 'price' })).toEqual([
      'Zebra props',
      'Mid props',
      'Alpaca props',
    ]);
    expect(await names({ 'category_ids[]': a })).toEqual(['Zebra props', 'Alpaca props']);
    expect(await names({ 'category_ids[]': [a, b, c], text: 'PROPS', order: 'name' })).toEqual([
      'Alpaca props',
      'Mid props',
      'Zebra props',
    ]);
    expect(await names({ 'category_ids[]': a, only_widget_visible: 'true' })).toEqual([
      'Zebra props',
    ]);
    expect(await names({ 'category_ids[]': a, only_widget_visible: 'false' })).toHaveLength(2);

    const list = await t.request('GET', '/api/v1/add_ons', { query: { per: 2 } });
    expect(list.body.meta).toMatchObject({ status: 'ok', per_page: 2, page: 1 });
    expect(list.body.meta.total_pages).toBe(Math.ceil(list.body.meta.total_count / 2));

    for (const query of [
      { order: 'color' },
      { 'category_ids[]': 'x' },
      { only_widget_visible: 'maybe' },
      { page: 0 },
    ]) {
      const res = await t.request('GET', '/api/v1/add_ons', { query });
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body).toMatchObject({ meta: { status: 'error' }, reason: 'invalid_parameter' });
    }
  });
});
