import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { hashSecret } from '../../sandbox/auth.js';
import { PERMISSIONS } from '../../sandbox/permissions.js';
import { ROUTES } from '../../api/routes.js';

let t: TestSandbox;
let app: Record<string, string>;
let categoryId: number;
let eventBookingId: number;

/** Installs a legacy app for a business and returns its request headers. */
function installLegacyApp(
  businessId: number,
  userId: number,
  appId: string,
): Record<string, string> {
  const db = t.sb.ctx.db;
  const info = db
    .prepare(
      'INSERT INTO oauth_apps (client_id, name, redirect_uris, permissions, legacy_app_id, legacy_secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    )
    .run(
      `client-${appId}`,
      'Design App',
      '[]',
      JSON.stringify(PERMISSIONS),
      appId,
      hashSecret(`secret-${appId}`),
      new Date().toISOString(),
    );
  db.prepare(
    'INSERT INTO oauth_grants (app_id, business_id, user_id, scope, created_at) VALUES (?, ?, ?, ?, ?)',
  ).run(
    Number(info.lastInsertRowid),
    businessId,
    userId,
    PERMISSIONS.join(' '),
    new Date().toISOString(),
  );
  return { 'app-id': appId, 'app-secret': `secret-${appId}`, 'franchise-id': String(businessId) };
}

const asApp = (extra: Record<string, unknown> = {}) => ({ key: null, headers: app, ...extra });

beforeAll(async () => {
  t = await startTestSandbox();
  app = installLegacyApp(t.sb.businessId, t.sb.userId, 'design-app-1');
  const cats = await t.request('GET', '/api/v1/design_template_categories');
  categoryId = Number(cats.body.data[0].id);
  eventBookingId = t.sb.ctx.records.insert('event_booking', t.sb.businessId, (id) => ({
    id,
    event_id: 1,
  })).id;
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

const templateBody = (extra: Record<string, unknown> = {}) => ({
  design_template_category_id: categoryId,
  name: 'Gold Floral',
  primary_image_url: 'https://cdn.example/gold.png',
  ...extra,
});

async function createTemplate(extra: Record<string, unknown> = {}) {
  const res = await t.request(
    'POST',
    '/api/v1/design_templates',
    asApp({ json: templateBody(extra) }),
  );
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('design template categories and layouts', () => {
  it('lists the default category with kind DesignTemplate', async () => {
    const res = await t.request('GET', '/api/v1/design_template_categories');
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ status: 'ok', total_count: 1 });
    expect(res.body.data[0]).toMatchObject({
      type: 'design_template_category',
      attributes: { id: categoryId, name: expect.any(String), kind: 'DesignTemplate' },
    });
  });

  it('lists layouts of a category; 400 for a malformed category id', async () => {
    const res = await t.request('GET', '/api/v1/design_category_layouts', {
      query: { design_template_category_id: categoryId },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    res.body.data.forEach((layout: any, i: number) => {
      expect(layout.type).toBe('design_category_layout');
      expect(layout.attributes).toMatchObject({
        id: Number(layout.id),
        name: expect.any(String),
        design_template_category_id: categoryId,
        position: i + 1,
      });
    });
    const none = await t.request('GET', '/api/v1/design_category_layouts', {
      query: { design_template_category_id: 999_999 },
    });
    expect(none.body.data).toEqual([]);
    const bad = await t.request('GET', '/api/v1/design_category_layouts', {
      query: { design_template_category_id: 'abc' },
    });
    expect(bad.status).toBe(400);
  });
});

describe('POST /api/v1/design_templates', () => {
  it('creates a template, creating missing tags and layouts once per name', async () => {
    const layouts = (
      await t.request('GET', '/api/v1/design_category_layouts', {
        query: { design_template_category_id: categoryId },
      })
    ).body.data;
    const res = await t.request(
      'POST',
      '/api/v1/design_templates',
      asApp({
        json: templateBody({
          description: 'Gold leaves',
          purchase_url: 'https://shop.example/gold',
          number_of_photos: 3,
          search_text: 'gold floral wedding',
          design_category_tag_names: ['Glitter', 'Glitter', 'glitter ', 'Wedding'],
          design_category_layout_ids: [Number(layouts[0].id)],
          design_category_layout_names: ['Tall Strip', 'Tall Strip', layouts[0].attributes.name],
        }),
      }),
    );
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.type).toBe('design_template');
    const a = d.attributes;
    expect(a).toMatchObject({
      id: Number(d.id),
      name: 'Gold Floral',
      description: 'Gold leaves',
      purchase_url: 'https://shop.example/gold',
      number_of_photos: 3,
      design_category_tag_names: ['Glitter', 'Wedding'],
      design_category_layout_names: [layouts[0].attributes.name, 'Tall Strip'],
      additional_images: [],
    });
    expect(a.design_category_tag_ids).toHaveLength(2);
    expect(a.design_category_tag_ids.every(Number.isInteger)).toBe(true);
    expect(a.design_category_layout_ids[0]).toBe(Number(layouts[0].id));
    expect(a.primary_image).toMatchObject({
      url: 'https://cdn.example/gold.png',
      video_variant: expect.any(String),
    });
    expect(d.relationships.design_template_category).toEqual({
      data: { id: String(categoryId), type: 'design_template_category' },
    });
    expect(d.relationships.design_category_tags.data).toHaveLength(2);
    expect(d.relationships.design_category_layouts.data).toHaveLength(2);

    const again = await createTemplate({ name: 'Silver', design_category_tag_names: ['Glitter'] });
    expect(again.attributes.design_category_tag_ids).toEqual([a.design_category_tag_ids[0]]);
    const after = await t.request('GET', '/api/v1/design_category_layouts', {
      query: { design_template_category_id: categoryId },
    });
    expect(after.body.data.filter((l: any) => l.attributes.name === 'Tall Strip')).toHaveLength(1);
  });

  it('names missing required fields and wrong types with 422', async () => {
    const res = await t.request('POST', '/api/v1/design_templates', asApp({ json: {} }));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        design_template_category_id: ["Design template category can't be blank"],
        name: ["Name can't be blank"],
        primary_image_url: ["Primary image url can't be blank"],
      },
    });
    const wrong = await t.request(
      'POST',
      '/api/v1/design_templates',
      asApp({
        json: templateBody({
          number_of_photos: '3',
          design_category_tag_ids: ['1'],
          design_category_layout_names: 'Strip',
          primary_image_url: 'not a url',
        }),
      }),
    );
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.errors).sort()).toEqual(
      [
        'design_category_layout_names',
        'design_category_tag_ids',
        'number_of_photos',
        'primary_image_url',
      ].sort(),
    );
    const unknown = await t.request(
      'POST',
      '/api/v1/design_templates',
      asApp({
        json: templateBody({
          design_template_category_id: 999_999,
          design_category_tag_ids: [999_998],
        }),
      }),
    );
    expect(unknown.body.errors).toEqual({
      design_template_category_id: ['Design template category must exist'],
    });
    const badTag = await t.request(
      'POST',
      '/api/v1/design_templates',
      asApp({
        json: templateBody({
          design_category_tag_ids: [999_998],
          design_category_tag_names: ['Fresh'],
        }),
      }),
    );
    expect(Object.keys(badTag.body.errors)).toEqual(['design_category_tag_ids']);
    // A failed request creates nothing.
    const tags = t.sb.ctx.records.list('design_category_tag', t.sb.businessId).records;
    expect(tags.map((r) => r.attrs.name)).not.toContain('Fresh');
  });

  it('is for installed apps only: an integration key gets 403; malformed JSON 400', async () => {
    const res = await t.request('POST', '/api/v1/design_templates', { json: templateBody() });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('apps_only');
    const bad = await t.request(
      'POST',
      '/api/v1/design_templates',
      asApp({ text: '{bad', headers: { ...app, 'content-type': 'application/json' } }),
    );
    expect(bad.status).toBe(400);
  });
});

describe('PUT /api/v1/design_templates/{id}', () => {
  it('updates only the fields sent; the category cannot change', async () => {
    const created = await createTemplate({
      description: 'keep',
      design_category_tag_names: ['Keep'],
    });
    const res = await t.request(
      'PUT',
      `/api/v1/design_templates/${created.id}`,
      asApp({
        json: { name: 'Renamed', number_of_photos: 4, design_template_category_id: 424242 },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      name: 'Renamed',
      number_of_photos: 4,
      description: 'keep',
      design_template_category_id: categoryId,
      design_category_tag_names: ['Keep'],
    });
    const tags = await t.request(
      'PUT',
      `/api/v1/design_templates/${created.id}`,
      asApp({ json: { design_category_tag_names: ['Other', 'Other'] } }),
    );
    expect(tags.body.data.attributes.design_category_tag_names).toEqual(['Other']);
  });

  it('answers 404 for unknown ids, 422 for blanks, 403 for integration keys', async () => {
    const created = await createTemplate();
    expect(
      (await t.request('PUT', '/api/v1/design_templates/999999', asApp({ json: { name: 'x' } })))
        .status,
    ).toBe(404);
    const blank = await t.request(
      'PUT',
      `/api/v1/design_templates/${created.id}`,
      asApp({ json: { name: '', number_of_photos: 1.5 } }),
    );
    expect(blank.status).toBe(422);
    expect(blank.body.errors).toEqual({
      name: ["Name can't be blank"],
      number_of_photos: ['Number of photos must be an integer greater than or equal to 0'],
    });
    // Below the bound, the refusal says the bound: it said only 'must be an integer' of -4.
    const negative = await t.request(
      'PUT',
      `/api/v1/design_templates/${created.id}`,
      asApp({ json: { number_of_photos: -4 } }),
    );
    expect(negative.status).toBe(422);
    expect(negative.body.errors).toEqual({
      number_of_photos: ['Number of photos must be greater than or equal to 0'],
    });
    expect(
      (await t.request('PUT', `/api/v1/design_templates/${created.id}`, { json: {} })).status,
    ).toBe(403);
  });
});

describe('GET /api/v1/design_templates', () => {
  it('lists for business keys too, filters by category and sideloads includes', async () => {
    const created = await createTemplate({
      name: 'Included',
      design_category_tag_names: ['Incl'],
      design_category_layout_names: ['Incl Layout'],
    });
    const res = await t.request('GET', '/api/v1/design_templates', {
      query: {
        design_template_category_id: categoryId,
        include: 'design_template_category,design_category_tags,design_category_layouts',
        per: 100,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ status: 'ok', page: 1 });
    const ids = res.body.data.map((d: any) => d.id);
    expect(ids).toContain(created.id);
    const included = res.body.included as any[];
    const keys = included.map((i) => `${i.type}:${i.id}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toContain(`design_template_category:${categoryId}`);
    expect(keys).toContain(`design_category_tag:${created.attributes.design_category_tag_ids[0]}`);
    expect(keys).toContain(
      `design_category_layout:${created.attributes.design_category_layout_ids[0]}`,
    );

    const plain = await t.request('GET', '/api/v1/design_templates');
    expect(plain.body.included).toBeUndefined();
    const other = await t.request('GET', '/api/v1/design_templates', {
      query: { design_template_category_id: 999_999 },
    });
    expect(other.body.data).toEqual([]);
    expect(
      (await t.request('GET', '/api/v1/design_templates', { query: { include: 'owners' } })).status,
    ).toBe(400);
  });
});

describe('POST /api/v1/template_selections', () => {
  const selection = (extra: Record<string, unknown> = {}) => ({
    template_selection: {
      event_booking_id: eventBookingId,
      design_id: 77,
      user_id: t.sb.userId,
      template_name: 'Gold Floral',
      template_image_url: 'https://cdn.example/gold.png',
      account_number: 'ACCT-9',
      template_purchase_url: 'https://shop.example/gold',
      ...extra,
    },
  });

  it('records the selection and answers { meta }', async () => {
    const res = await t.request(
      'POST',
      '/api/v1/template_selections',
      asApp({ json: selection() }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ meta: { status: 'ok' } });
    const stored = t.sb.ctx.records.list('template_selection', t.sb.businessId).records;
    expect(stored.at(-1)?.attrs).toMatchObject({
      event_booking_id: eventBookingId,
      design_id: 77,
      template_name: 'Gold Floral',
      account_number: 'ACCT-9',
    });
  });

  it('answers 422 in the validation shape for missing and ill-typed fields', async () => {
    const res = await t.request(
      'POST',
      '/api/v1/template_selections',
      asApp({ json: { template_selection: { design_id: 'x' } } }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      meta: { status: 'error' },
      errors: {
        event_booking_id: ["Event booking can't be blank"],
        design_id: ['Design must be an integer greater than or equal to 1'],
        user_id: ["User can't be blank"],
        template_name: ["Template name can't be blank"],
        template_image_url: ["Template image url can't be blank"],
      },
    });
    const missing = await t.request('POST', '/api/v1/template_selections', asApp({ json: {} }));
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({
      template_selection: ["Template selection can't be blank"],
    });
    const unknown = await t.request(
      'POST',
      '/api/v1/template_selections',
      asApp({ json: selection({ event_booking_id: 999_999 }) }),
    );
    expect(unknown.body.errors).toEqual({ event_booking_id: ['Event booking must exist'] });
  });

  it('is for installed apps only', async () => {
    const res = await t.request('POST', '/api/v1/template_selections', { json: selection() });
    expect(res.status).toBe(403);
  });
});

describe('apps-only writes need a permission, not just an app token', () => {
  /** A bearer token of an app installed with exactly these permissions. */
  function tokenWith(permissions: string[]): string {
    const created = t.sb.admin.createApp({
      name: `Designer ${permissions.join('+')}`,
      redirectUris: ['https://designer.example/callback'],
      permissions,
    });
    return t.sb.admin.install({ appId: created.id }).access_token;
  }
  const selectionBody = () => ({
    template_selection: {
      event_booking_id: eventBookingId,
      design_id: 5,
      user_id: t.sb.userId,
      template_name: 'Silver',
      template_image_url: 'https://cdn.example/silver.png',
    },
  });

  it('refuses an app granted only lead_read with 403 naming the permission', async () => {
    const bearer = tokenWith(['lead_read']);
    const existing = await createTemplate();
    const refusals = [
      ['POST', '/api/v1/design_templates', templateBody(), 'offerings_write'],
      ['PUT', `/api/v1/design_templates/${existing.id}`, { name: 'Nope' }, 'offerings_write'],
      ['POST', '/api/v1/template_selections', selectionBody(), 'assigned_event_write'],
    ] as const;
    for (const [method, path, json, permission] of refusals) {
      const res = await t.request(method, path, { bearer, json });
      expect(res.status, path).toBe(403);
      expect(res.body, path).toMatchObject({
        meta: { status: 'error' },
        status: 'forbidden',
        reason: 'permission_denied',
      });
      expect(res.body.message, path).toContain(permission);
    }
    // Nothing was written.
    const read = await t.request('GET', '/api/v1/design_templates', { query: { per: 100 } });
    expect(read.body.data.map((d: any) => d.attributes.name)).not.toContain('Nope');
  });

  it('admits offerings_write for templates and an event write permission for selections', async () => {
    const designer = tokenWith(['offerings_write']);
    const created = await t.request('POST', '/api/v1/design_templates', {
      bearer: designer,
      json: templateBody({ name: 'By Designer' }),
    });
    expect(created.status).toBe(200);
    const updated = await t.request('PUT', `/api/v1/design_templates/${created.body.data.id}`, {
      bearer: designer,
      json: { name: 'By Designer II' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.attributes.name).toBe('By Designer II');
    // Templates do not open selections, which write onto an event booking.
    const wrong = await t.request('POST', '/api/v1/template_selections', {
      bearer: designer,
      json: selectionBody(),
    });
    expect(wrong.status).toBe(403);
    for (const permission of ['assigned_event_write', 'unassigned_event_write']) {
      const res = await t.request('POST', '/api/v1/template_selections', {
        bearer: tokenWith([permission]),
        json: selectionBody(),
      });
      expect(res.status, permission).toBe(200);
    }
  });

  it('the route table marks these permissions as assumed', () => {
    const rows = ROUTES.filter((r) => 'appsOnly' in r && r.appsOnly && r.method !== 'GET');
    expect(rows.map((r) => r.id).sort()).toEqual([
      'designTemplates.create',
      'designTemplates.update',
      'templateSelections.create',
    ]);
    for (const r of rows) {
      expect(r.permissions, r.id).not.toBeNull();
      expect(r.permissionSource, r.id).toBe('assumed');
    }
  });
});
