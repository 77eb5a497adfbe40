import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  createQuestionnaireTemplate,
  markQuestionnaireComplete,
  type QuestionnaireAttrs,
} from '../../sandbox/resources/questionnaires.js';
import { answers } from '../../api/schemas/questionnaire-answers.js';

let t: TestSandbox;
let staffKey: string;
let customerKey: string;
beforeAll(async () => {
  t = await startTestSandbox();
  const staff = t.sb.identity.createUser({
    businessId: t.sb.businessId,
    name: 'Sam Staff',
    email: 'sam@example.com',
    role: 'staff',
  });
  staffKey = t.sb.identity.createKey({ userId: staff.id }).key;
  const customer = t.sb.identity.createUser({
    businessId: t.sb.businessId,
    name: 'Cara Customer',
    email: 'cara@example.com',
    role: 'customer',
  });
  customerKey = t.sb.identity.createKey({ userId: customer.id }).key;
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

const DAY = 86_400_000;
function event(startsAtMs = Date.now() + 30 * DAY): number {
  return t.sb.ctx.records.insert('event', t.sb.businessId, (id) => ({
    id,
    title: 'X',
    starts_at: new Date(startsAtMs).toISOString(),
  })).id;
}

async function templates(key?: string) {
  const res = await t.request('GET', '/api/v1/questionnaire_templates', key ? { key } : {});
  expect(res.status).toBe(200);
  return res.body.data as any[];
}
async function templateId(title: string): Promise<number> {
  const found = (await templates()).find((x) => x.attributes.title === title);
  expect(found, title).toBeDefined();
  return Number(found.id);
}
async function attach(eventId: number, title: string, key?: string) {
  return t.request('POST', '/api/v1/questionnaires', {
    json: { event_id: eventId, questionnaire_template_id: await templateId(title) },
    ...(key ? { key } : {}),
  });
}
function fieldsOf(q: any): any[] {
  return q.attributes.data.fieldGroups.flatMap((g: any) => g.fields);
}
function fieldNamed(q: any, name: string): any {
  return fieldsOf(q).find((f) => f.name === name);
}

describe('questionnaire templates', () => {
  it('lists templates ordered by title with full data and list meta', async () => {
    const res = await t.request('GET', '/api/v1/questionnaire_templates');
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ status: 'ok', page: 1, total_pages: 1 });
    const titles = res.body.data.map((x: any) => x.attributes.title);
    expect(titles).toEqual([...titles].sort((a: string, b: string) => a.localeCompare(b)));
    expect(res.body.meta.total_count).toBe(titles.length);
    for (const tpl of res.body.data) {
      expect(tpl.type).toBe('questionnaire_template');
      expect(tpl.attributes.id).toBe(Number(tpl.id));
      expect(Array.isArray(tpl.attributes.data.fieldGroups)).toBe(true);
      for (const group of tpl.attributes.data.fieldGroups) {
        expect(typeof group.name).toBe('string');
        for (const f of group.fields) {
          expect(f).toMatchObject({
            uuid: expect.any(String),
            type: expect.any(String),
            name: expect.any(String),
          });
        }
      }
      for (const flag of [
        'allow_staff_view',
        'allow_customer_view',
        'allow_staff_edit',
        'allow_customer_edit',
      ]) {
        expect(typeof tpl.attributes[flag]).toBe('boolean');
      }
      expect([null, 'before', 'after']).toContain(tpl.attributes.show_before_or_after);
    }
  });

  it('shows non-admin keys only templates with allow_staff_view', async () => {
    const all = await templates();
    const staffOnly = await templates(staffKey);
    expect(all.some((x) => !x.attributes.allow_staff_view)).toBe(true);
    expect(staffOnly.map((x) => x.id)).toEqual(
      all.filter((x) => x.attributes.allow_staff_view).map((x) => x.id),
    );
    const hidden = all.find((x) => !x.attributes.allow_staff_view);
    expect(
      (await t.request('GET', `/api/v1/questionnaire_templates/${hidden.id}`, { key: staffKey }))
        .status,
    ).toBe(404);
  });

  it('fetches one; 404 for unknown, deleted and other-business templates; 403 without planning_read', async () => {
    const id = await templateId('Wedding Planning');
    const res = await t.request('GET', `/api/v1/questionnaire_templates/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.attributes.title).toBe('Wedding Planning');
    expect((await t.request('GET', '/api/v1/questionnaire_templates/999999')).status).toBe(404);

    const doomed = createQuestionnaireTemplate(t.sb.ctx, t.sb.businessId, {
      title: 'Doomed',
      data: { fieldGroups: [] },
    });
    expect((await templates()).map((x) => x.id)).toContain(String(doomed.id));
    t.sb.ctx.records.softDelete(doomed, t.sb.ctx.clock.iso());
    expect((await templates()).map((x) => x.id)).not.toContain(String(doomed.id));
    expect((await t.request('GET', `/api/v1/questionnaire_templates/${doomed.id}`)).status).toBe(
      404,
    );

    const other = t.sb.identity.createBusiness({ name: 'Other' });
    const user = t.sb.identity.createUser({ businessId: other.id, name: 'O', email: 'o@o.com' });
    const { key } = t.sb.identity.createKey({ userId: user.id });
    const theirs = (await templates(key))[0];
    expect((await t.request('GET', `/api/v1/questionnaire_templates/${theirs.id}`)).status).toBe(
      404,
    );
    const { key: noPlanning } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['lead_read'],
    });
    expect(
      (await t.request('GET', '/api/v1/questionnaire_templates', { key: noPlanning })).status,
    ).toBe(403);
  });
});

describe('attach from a template', () => {
  it('copies questions and permission settings; later template edits do not reach it', async () => {
    const eventId = event();
    const tplId = await templateId('Wedding Planning');
    const tpl = (await t.request('GET', `/api/v1/questionnaire_templates/${tplId}`)).body.data;
    const res = await attach(eventId, 'Wedding Planning');
    expect(res.status).toBe(200);
    const q = res.body.data;
    expect(q.type).toBe('questionnaire');
    expect(q.attributes).toMatchObject({
      id: Number(q.id),
      event_id: eventId,
      questionnaire_template_id: tplId,
      kind: 'standard',
      title: 'Wedding Planning',
      values: {},
      data: tpl.attributes.data,
      allow_staff_view: tpl.attributes.allow_staff_view,
      allow_customer_view: tpl.attributes.allow_customer_view,
      allow_staff_edit: tpl.attributes.allow_staff_edit,
      allow_customer_edit: tpl.attributes.allow_customer_edit,
      show_before_or_after: tpl.attributes.show_before_or_after,
      completed: false,
    });
    expect(typeof q.attributes.pdf_url).toBe('string');

    const stored = t.sb.ctx.records.get('questionnaire_template', t.sb.businessId, tplId)!;
    t.sb.ctx.records.update(stored, { title: 'Renamed', data: { fieldGroups: [] } });
    const again = await t.request('GET', `/api/v1/questionnaires/${q.id}`);
    expect(again.body.data.attributes.title).toBe('Wedding Planning');
    expect(again.body.data.attributes.data).toEqual(tpl.attributes.data);
    t.sb.ctx.records.update(stored, { title: 'Wedding Planning', data: tpl.attributes.data });
  });

  it('answers 422 for missing or ill-typed fields, 404 for unknown event or template', async () => {
    const missing = await t.request('POST', '/api/v1/questionnaires', { json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual({
      event_id: ["Event can't be blank"],
      questionnaire_template_id: ["Questionnaire template can't be blank"],
    });
    const wrong = await t.request('POST', '/api/v1/questionnaires', {
      json: { event_id: '12', questionnaire_template_id: 1.5 },
    });
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.errors).sort()).toEqual([
      'event_id',
      'questionnaire_template_id',
    ]);
    const tplId = await templateId('Wedding Planning');
    expect(
      (
        await t.request('POST', '/api/v1/questionnaires', {
          json: { event_id: 999_999, questionnaire_template_id: tplId },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await t.request('POST', '/api/v1/questionnaires', {
          json: { event_id: event(), questionnaire_template_id: 999_999 },
        })
      ).status,
    ).toBe(404);
    const bad = await t.request('POST', '/api/v1/questionnaires', {
      text: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
  });

  it('lets non-admins attach only allow_staff_view templates; 403 without event write', async () => {
    const eventId = event();
    const denied = await attach(eventId, 'Staff Setup Checklist', staffKey);
    expect(denied.status).toBe(403);
    expect((await attach(eventId, 'Corporate Event Details', staffKey)).status).toBe(200);
    expect((await attach(eventId, 'Staff Setup Checklist')).status).toBe(200);
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['assigned_event_read', 'unassigned_event_read', 'planning_read'],
    });
    expect((await attach(eventId, 'Corporate Event Details', key)).status).toBe(403);
  });

  it('refuses permission settings in the body: integration keys cannot change them', async () => {
    const res = await t.request('POST', '/api/v1/questionnaires', {
      json: {
        event_id: event(),
        questionnaire_template_id: await templateId('Wedding Planning'),
        allow_customer_view: false,
      },
    });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('business_settings_permission_required');
  });
});

describe('questionnaires of a booking', () => {
  it('needs an integer event_id of an existing event', async () => {
    // A missing required query parameter is a 422 naming it, as docs/sandbox.md says and the
    // availability lookups answer (it was a 400 'parameter_missing', a reason listed nowhere).
    const missing = await t.request('GET', '/api/v1/questionnaires');
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      meta: { status: 'error' },
      errors: { event_id: ["Event can't be blank"] },
    });
    const bad = await t.request('GET', '/api/v1/questionnaires', { query: { event_id: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.reason).toBe('invalid_parameter');
    expect(
      (await t.request('GET', '/api/v1/questionnaires', { query: { event_id: 999_999 } })).status,
    ).toBe(404);
  });

  it('filters per user and by the before/after window; ordered by id; deleted hidden', async () => {
    const future = event(Date.now() + 10 * DAY);
    const past = event(Date.now() - 10 * DAY);
    const ids: Record<string, string> = {};
    for (const eventId of [future, past]) {
      for (const title of [
        'Wedding Planning',
        'Post-Event Feedback',
        'Staff Setup Checklist',
        'Corporate Event Details',
      ]) {
        const res = await attach(eventId, title);
        ids[`${eventId}:${title}`] = res.body.data.id;
      }
    }
    const external = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: { event_id: future, title: 'Venue form', external_url: 'forms.example/venue' },
    });
    const list = async (eventId: number, key?: string) => {
      const res = await t.request('GET', '/api/v1/questionnaires', {
        query: { event_id: eventId },
        ...(key ? { key } : {}),
      });
      expect(res.status).toBe(200);
      return res.body.data.map((q: any) => q.attributes.title);
    };
    // Before the booking: 'before' and unrestricted ones; after: 'after' and unrestricted ones.
    expect(await list(future)).toEqual([
      'Wedding Planning',
      'Staff Setup Checklist',
      'Corporate Event Details',
      'Venue form',
    ]);
    expect(await list(past)).toEqual([
      'Wedding Planning',
      'Post-Event Feedback',
      'Corporate Event Details',
    ]);
    expect(await list(future, staffKey)).toEqual([
      'Wedding Planning',
      'Corporate Event Details',
      'Venue form',
    ]);
    const customerView = await list(past, customerKey);
    expect(customerView).toEqual([
      'Wedding Planning',
      'Post-Event Feedback',
      'Corporate Event Details',
    ]);

    const hiddenId = ids[`${future}:Post-Event Feedback`];
    expect((await t.request('GET', `/api/v1/questionnaires/${hiddenId}`)).status).toBe(404);
    const doomed = t.sb.ctx.records.get(
      'questionnaire',
      t.sb.businessId,
      Number(external.body.data.id),
    )!;
    t.sb.ctx.records.softDelete(doomed, t.sb.ctx.clock.iso());
    expect(await list(future)).not.toContain('Venue form');
    const res = await t.request('GET', '/api/v1/questionnaires', { query: { event_id: future } });
    const idsInOrder = res.body.data.map((q: any) => Number(q.id));
    expect(idsInOrder).toEqual([...idsInOrder].sort((a, b) => a - b));
    expect(res.body.meta).toMatchObject({ total_count: 3, per_page: 25, page: 1 });
  });

  it('hides questionnaires customers may not view', async () => {
    const eventId = event();
    const tpl = createQuestionnaireTemplate(t.sb.ctx, t.sb.businessId, {
      title: 'Staff notes',
      allow_customer_view: false,
      data: { fieldGroups: [] },
    });
    const res = await t.request('POST', '/api/v1/questionnaires', {
      json: { event_id: eventId, questionnaire_template_id: tpl.id },
    });
    const list = await t.request('GET', '/api/v1/questionnaires', {
      query: { event_id: eventId },
      key: customerKey,
    });
    expect(list.body.data).toEqual([]);
    expect(
      (await t.request('GET', `/api/v1/questionnaires/${res.body.data.id}`, { key: customerKey }))
        .status,
    ).toBe(404);
  });
});

describe('external questionnaires', () => {
  it('stores a missing scheme as https, no questions and no pdf', async () => {
    const eventId = event();
    const res = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: {
        event_id: eventId,
        title: 'Music form',
        external_url: 'forms.example/x?y=1',
        provider: 'FormCo',
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.attributes).toMatchObject({
      kind: 'external',
      title: 'Music form',
      external_url: 'https://forms.example/x?y=1',
      provider: 'FormCo',
      data: { fieldGroups: [] },
      pdf_url: null,
      event_id: eventId,
    });
    const kept = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: { event_id: eventId, title: 'Plain', external_url: 'http://forms.example/p' },
    });
    expect(kept.body.data.attributes).toMatchObject({
      external_url: 'http://forms.example/p',
      provider: null,
    });

    const answer = await t.request('PATCH', `/api/v1/questionnaires/${res.body.data.id}/answers`, {
      json: { values: {} },
    });
    expect(answer.status).toBe(422);
    expect(answer.body.errors.values).toHaveLength(1);
  });

  it('answers 422 for missing fields and bad urls, 404 for unknown events', async () => {
    const res = await t.request('POST', '/api/v1/questionnaires/create_external', { json: {} });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      event_id: ["Event can't be blank"],
      title: ["Title can't be blank"],
      external_url: ["External url can't be blank"],
    });
    const bad = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: { event_id: event(), title: 'x', external_url: 'not a url', provider: 5 },
    });
    expect(Object.keys(bad.body.errors).sort()).toEqual(['external_url', 'provider']);
    const none = await t.request('POST', '/api/v1/questionnaires/create_external', {
      json: { event_id: 999_999, title: 'x', external_url: 'forms.example' },
    });
    expect(none.status).toBe(404);
  });
});

describe('PATCH /api/v1/questionnaires/{id}/answers', () => {
  async function wedding() {
    const res = await attach(event(), 'Wedding Planning');
    expect(res.status).toBe(200);
    return res.body.data;
  }
  const path = (q: any) => `/api/v1/questionnaires/${q.id}/answers`;

  it('stores valid answers, keeps untouched fields and clears nulls', async () => {
    const q = await wedding();
    const hashtag = fieldNamed(q, 'Wedding hashtag').uuid;
    const names = fieldNamed(q, 'Names of the couple').uuid;
    const entrance = fieldNamed(q, 'Grand entrance').uuid;
    const first = await t.request('PATCH', path(q), {
      json: {
        values: answers.merge(
          answers.text(hashtag, '#JoAndAl'),
          answers.texts(names, ['Jo', 'Al']),
          answers.text(entrance, 'Walk in', { timelineStartsAt: '6:00 PM' }),
        ),
      },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ meta: { status: 'ok' } });
    await t.request('PATCH', path(q), { json: { values: { [hashtag]: null } } });
    const after = (await t.request('GET', `/api/v1/questionnaires/${q.id}`)).body.data.attributes;
    expect(after.values).toEqual({
      [names]: [{ text: 'Jo', text2: 'Al' }],
      [entrance]: [{ text: 'Walk in', timelineStartsAt: '6:00 PM' }],
    });
  });

  it('rejects foreign elements, unknown uuids and extra entries with 422 by path', async () => {
    const q = await wedding();
    const hashtag = fieldNamed(q, 'Wedding hashtag').uuid;
    const header = fieldNamed(q, 'Tell us about you').uuid;
    const res = await t.request('PATCH', path(q), {
      json: {
        values: {
          [hashtag]: [{ text: 'a' }, { text: 'b' }],
          [header]: [{ text: 'x' }],
          nope: [{ text: 'x' }],
          [fieldNamed(q, 'Dress code').uuid]: [{ text: 'Cocktail' }],
        },
      },
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual(
      [
        `values.${hashtag}`,
        `values.${header}`,
        'values.nope',
        `values.${fieldNamed(q, 'Dress code').uuid}[0].text`,
      ].sort(),
    );
    expect(res.body.errors['values.nope']).toEqual([
      'values.nope is not a question of this questionnaire',
    ]);
    const missing = await t.request('PATCH', path(q), { json: {} });
    expect(missing.body.errors).toEqual({ values: ["Values can't be blank"] });
    const untouched = (await t.request('GET', `/api/v1/questionnaires/${q.id}`)).body.data;
    expect(untouched.attributes.values).toEqual({});
  });

  it('holds songs to the suggestion list when custom entries are off', async () => {
    const q = await wedding();
    const mustPlay = fieldNamed(q, 'Must play');
    const firstDance = fieldNamed(q, 'First dance');
    const list = (await t.request('GET', `/api/v1/suggestion_lists/${mustPlay.suggestionListId}`))
      .body.data.attributes.songs;
    const listed = list[0];
    const ok = await t.request('PATCH', path(q), {
      json: {
        values: answers.merge(
          answers.song(mustPlay.uuid, [
            { ...listed, songSuggestionListId: mustPlay.suggestionListId },
            { songName: list[1].songName, songArtistName: list[1].songArtistName },
          ]),
          answers.song(firstDance.uuid, { songName: 'Our Own Song', songArtistName: 'Local Band' }),
        ),
      },
    });
    expect(ok.status).toBe(200);
    const custom = await t.request('PATCH', path(q), {
      json: {
        values: answers.song(mustPlay.uuid, { songName: 'Not Listed', songArtistName: 'Nobody' }),
      },
    });
    expect(custom.status).toBe(422);
    expect(Object.keys(custom.body.errors)).toEqual([`values.${mustPlay.uuid}[0].songName`]);
  });

  it('leaves answers of unknown field types untouched', async () => {
    const tpl = createQuestionnaireTemplate(t.sb.ctx, t.sb.businessId, {
      title: 'Future types',
      data: {
        fieldGroups: [
          { name: 'T', fields: [{ uuid: 'holo-1', type: 'hologram_field', name: 'Holo' }] },
        ],
      },
    });
    const res = await t.request('POST', '/api/v1/questionnaires', {
      json: { event_id: event(), questionnaire_template_id: tpl.id },
    });
    const weird = { 'holo-1': [{ beam: { color: 'blue' } }, { beam: 2 }] };
    const patch = await t.request('PATCH', `/api/v1/questionnaires/${res.body.data.id}/answers`, {
      json: { values: weird },
    });
    expect(patch.status).toBe(200);
    const after = await t.request('GET', `/api/v1/questionnaires/${res.body.data.id}`);
    expect(after.body.data.attributes.values).toEqual(weird);
  });

  it('locks a completed questionnaire against customer edits and records the notifications', async () => {
    const q = await wedding();
    const hashtag = fieldNamed(q, 'Wedding hashtag').uuid;
    const values = answers.text(hashtag, '#x');
    expect((await t.request('PATCH', path(q), { json: { values }, key: customerKey })).status).toBe(
      200,
    );
    const stored = t.sb.ctx.records.get<QuestionnaireAttrs>(
      'questionnaire',
      t.sb.businessId,
      Number(q.id),
    )!;
    const done = markQuestionnaireComplete(t.sb.ctx, stored);
    markQuestionnaireComplete(t.sb.ctx, done);
    const locked = await t.request('PATCH', path(q), { json: { values }, key: customerKey });
    expect(locked.status).toBe(403);
    expect(locked.body.reason).toBe('questionnaire_locked');
    expect((await t.request('PATCH', path(q), { json: { values }, key: staffKey })).status).toBe(
      200,
    );
    const after = (await t.request('GET', `/api/v1/questionnaires/${q.id}`)).body.data.attributes;
    expect(after).toMatchObject({ completed: true, locked_for_customers: true });
    expect(after.notifications_sent).toEqual([
      { kind: 'automated_message', name: 'Questionnaire Submitted', sent_at: expect.any(String) },
      { kind: 'staff_push', name: 'Questionnaire Submitted', sent_at: expect.any(String) },
    ]);
  });

  it('answers 404 for unknown ids, 403 without event write or edit rights', async () => {
    expect(
      (await t.request('PATCH', '/api/v1/questionnaires/999999/answers', { json: { values: {} } }))
        .status,
    ).toBe(404);
    const q = await wedding();
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['assigned_event_read', 'unassigned_event_read'],
    });
    expect((await t.request('PATCH', path(q), { json: { values: {} }, key })).status).toBe(403);
    const feedback = await attach(event(Date.now() - DAY), 'Post-Event Feedback');
    const staffEdit = await t.request(
      'PATCH',
      `/api/v1/questionnaires/${feedback.body.data.id}/answers`,
      {
        json: { values: {} },
        key: staffKey,
      },
    );
    expect(staffEdit.status).toBe(403);
  });
});

describe('questionnaires of an event the credential may not see', () => {
  it('are hidden from an assigned_* credential as the event is: listed, read, attached, answered', async () => {
    const mine = t.sb.ctx.records.insert('event', t.sb.businessId, (id) => ({
      id,
      title: 'Mine',
      starts_at: new Date(Date.now() + 30 * DAY).toISOString(),
      assigned_staff_ids: [t.sb.userId],
    })).id;
    const theirs = t.sb.ctx.records.insert('event', t.sb.businessId, (id) => ({
      id,
      title: 'Theirs',
      starts_at: new Date(Date.now() + 30 * DAY).toISOString(),
      assigned_staff_ids: [],
    })).id;
    const q = (await attach(theirs, 'Wedding Planning')).body.data.id as string;
    const { key } = t.sb.identity.createKey({
      userId: t.sb.userId,
      permissions: ['assigned_event_read', 'assigned_event_write', 'planning_read'],
    });
    // The event itself answers 404 to this key: so does everything reached through it.
    expect((await t.request('GET', `/api/v1/events/${theirs}`, { key })).status).toBe(404);
    const hidden = [
      await t.request('GET', '/api/v1/questionnaires', { query: { event_id: theirs }, key }),
      await t.request('GET', `/api/v1/questionnaires/${q}`, { key }),
      await attach(theirs, 'Wedding Planning', key),
      await t.request('POST', '/api/v1/questionnaires/create_external', {
        json: { event_id: theirs, title: 'Form', external_url: 'https://forms.example.com/x' },
        key,
      }),
      await t.request('PATCH', `/api/v1/questionnaires/${q}/answers`, {
        json: { values: {} },
        key,
      }),
    ];
    expect(hidden.map((r) => r.status)).toEqual([404, 404, 404, 404, 404]);
    // Its own assigned event stays reachable.
    expect((await attach(mine, 'Wedding Planning', key)).status).toBe(200);
  });
});

describe('suggestion lists', () => {
  it('lists the business lists and returns the songs of one', async () => {
    const res = await t.request('GET', '/api/v1/suggestion_lists');
    expect(res.status).toBe(200);
    expect(res.body.meta.total_count).toBeGreaterThan(0);
    const first = res.body.data[0];
    expect(first.type).toBe('suggestion_list');
    const one = await t.request('GET', `/api/v1/suggestion_lists/${first.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data.attributes.id).toBe(Number(first.id));
    expect(one.body.data.attributes.songs.length).toBeGreaterThan(0);
    for (const song of one.body.data.attributes.songs) {
      expect(song).toMatchObject({
        songName: expect.any(String),
        songArtistName: expect.any(String),
        songId: expect.any(String),
        songProvider: expect.any(String),
      });
    }
    expect((await t.request('GET', '/api/v1/suggestion_lists/999999')).status).toBe(404);
  });
});
