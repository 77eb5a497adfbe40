import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answers,
  apiKeyAuth,
  AuthenticationError,
  bearerAuth,
  createClient,
  InvalidGrantError,
  NetworkError,
  TlsTrustError,
  NotFoundError,
  PermissionError,
  quickEventBookings,
  RateLimitedError,
  ReachLimitError,
  refreshTokens,
  RequestValidationError,
  ServerError,
  ValidationError,
  type Client,
  type ClientOptions,
  type QuestionnaireData,
  type TokenRequest,
  ROUTES,
} from '../../api/index.js';
import { textOf } from '../../api/transport.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { closedPort } from '../helpers/ports.js';
import { createLead } from '../../sandbox/resources/leads.js';
import { readLeadInput } from '../../sandbox/resources/leads-input.js';
import { createEventNote } from '../../sandbox/resources/event-notes.js';
import { ensureDefaultCalendar } from '../../sandbox/resources/availability.js';

/**
 * Every operation of the client against a real sandbox over HTTPS, plus each error class.
 * Fixtures are made through the client itself wherever an operation exists.
 */
let sb: Sandbox;
let client: Client;
let ca: Buffer;
const internalErrors: unknown[] = [];
/** Operations that got an answer, to prove every row of the route table was called. */
const answered = new Set<string>();

function clientFor(auth: ClientOptions['auth'], extra: Partial<ClientOptions> = {}): Client {
  return createClient({
    baseUrl: sb.baseUrl,
    auth,
    ca,
    onResponse: ({ operation }) => answered.add(operation),
    ...extra,
  });
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

function totalRequests(): number {
  let n = 0;
  for (const statuses of Object.values(sb.ctx.counters.snapshot().requests)) {
    for (const count of Object.values(statuses)) n += count;
  }
  return n;
}

/** Fixture ids found through the client. */
const ids = { classic: 0, hourly: 0, backdrop: 0 };

beforeAll(async () => {
  sb = await startSandbox({ onInternalError: (e) => internalErrors.push(e) });
  if (!sb.caFile) throw new Error('the sandbox runs over HTTPS in these tests');
  ca = readFileSync(sb.caFile);
  client = clientFor(apiKeyAuth(sb.apiKey));
  const packages = await client.offerings.packages.list({ per: 100 });
  ids.classic =
    packages.data.find((p) => p.attributes.name === 'Classic Booth')?.attributes.id ?? 0;
  ids.hourly =
    packages.data.find((p) => p.attributes.price_method === 'hourly')?.attributes.id ?? 0;
  const backdrop = sb.ctx.records.list<{ id: number }>('photobooth_background', sb.businessId)
    .records[0];
  ids.backdrop = backdrop?.id ?? 0;
});

afterAll(async () => {
  await sb?.close();
  expect(internalErrors).toEqual([]);
});

describe('offerings', () => {
  it('lists services, package groups of a service and packages of a group, and pages them', async () => {
    const services = await client.offerings.services.list();
    expect(services.meta.status).toBe('ok');
    expect(services.data.length).toBeGreaterThan(0);
    const service = services.data[0]!;
    expect(typeof service.id).toBe('string');
    expect(service.attributes.id).toBe(Number(service.id));

    const groups = await client.offerings.packageGroups.list({ service_id: service.attributes.id });
    expect(groups.data.every((g) => g.attributes.service_id === service.attributes.id)).toBe(true);
    const group = groups.data[0]!;
    const packages = await client.offerings.packages.list({
      package_group_id: group.attributes.id,
    });
    expect(packages.data.length).toBeGreaterThan(0);
    expect(packages.data.every((p) => p.attributes.package_group_id === group.attributes.id)).toBe(
      true,
    );

    const all: number[] = [];
    for await (const page of client.offerings.packages.pages({}, { per: 2 })) {
      all.push(...page.items.map((p) => p.attributes.id));
    }
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe((await client.offerings.packages.list({ per: 100 })).meta.total_count);
    expect(ids.classic).toBeGreaterThan(0);
  });
});

describe('add-on categories and add-ons', () => {
  it('creates, reads, renames, lists with sideloads and deletes a category with its add-ons', async () => {
    const created = await client.addOnCategories.create({ name: 'Props' });
    const categoryId = created.data.attributes.id;
    expect(created.data.type).toBe('add_on_category');

    const addOn = await client.addOns.create({
      add_on_category_id: categoryId,
      name: 'Giant Sunglasses',
      description: 'Oversized props',
      price_method: 'flat_rate',
      price: 25,
    });
    expect(addOn.data.attributes.price_cents).toBe(2500);
    expect(addOn.data.attributes.price).toBe('25.00');

    const free = await client.addOns.create({
      add_on_category_id: categoryId,
      name: 'Sign',
      description: 'A welcome sign',
    });
    expect(free.data.attributes.price_method).toBe('flat_rate');
    expect(free.data.attributes.price_cents).toBe(0);

    const byCategory = await client.addOns.list({
      category_ids: [categoryId],
      only_widget_visible: false,
    });
    expect(byCategory.data.map((a) => a.attributes.name).sort()).toEqual([
      'Giant Sunglasses',
      'Sign',
    ]);
    const byText = await client.addOns.list({ text: 'Sunglasses' });
    expect(byText.data.map((a) => a.attributes.id)).toContain(addOn.data.attributes.id);

    const fetched = await client.addOnCategories.get(categoryId, { include: 'add_ons' });
    expect(fetched.included?.filter((i) => i.type === 'add_on')).toHaveLength(2);
    const listed = await client.addOnCategories.list({ include: 'add_ons' });
    expect(listed.data.map((c) => c.attributes.id)).toContain(categoryId);

    const renamed = await client.addOnCategories.update(categoryId, { name: 'Fun Props' });
    expect(renamed.data.attributes.name).toBe('Fun Props');

    const deleted = await client.addOnCategories.delete(categoryId);
    expect(deleted.meta.status).toBe('ok');
    expect(await caught(client.addOnCategories.get(categoryId))).toBeInstanceOf(NotFoundError);
    const after = await client.addOns.list({ category_ids: [categoryId] });
    expect(after.data).toHaveLength(0);
  });
});

describe('leads', () => {
  let leadId = 0;

  it('creates a lead with origin API and default flags, fetches and searches it', async () => {
    const created = await client.leads.create({
      email: 'casey@example.com',
      first_name: 'Casey',
      last_name: 'Nguyen',
      event_date: '2031-07-04',
      package_id: ids.classic,
      lead_source: 'API',
      indoor_outdoor: 'Outdoor',
    });
    const lead = created.data.attributes;
    leadId = lead.id;
    expect(lead.origin).toBe('API');
    expect([lead.spam, lead.archived, lead.converted_to_event, lead.times_contacted]).toEqual([
      false,
      false,
      false,
      0,
    ]);

    const fetched = await client.leads.get(leadId);
    expect(fetched.data.attributes.email).toBe('casey@example.com');

    const found = await client.leads.list({ email: 'casey@example.com', include: 'lead_bookings' });
    expect(found.data.map((l) => l.attributes.id)).toEqual([leadId]);
    expect(await client.leads.count({ email: 'casey@example.com' })).toBe(1);
  });

  it('reads names in any script back exactly, and decodes an answer that is not UTF-8 as before', async () => {
    // The client decodes answers itself (api/transport.ts textOf): a strict decoder, and
    // Buffer#toString's replacement characters for bytes that are not UTF-8.
    const names = { first_name: 'Zoë Łucja 佐藤', last_name: 'Nguyễn-Þórsdóttir 🎉' };
    const created = await client.leads.create({
      email: 'scripts@example.com',
      ...names,
      package_id: ids.classic,
    });
    const fetched = await client.leads.get(created.data.attributes.id);
    expect({
      first_name: fetched.data.attributes.first_name,
      last_name: fetched.data.attributes.last_name,
    }).toEqual(names);
    const mixed = Buffer.concat([
      Buffer.from('\ufeff{"a":"ok é'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}'),
    ]);
    expect(textOf(mixed)).toBe(mixed.toString('utf8'));
    expect(textOf(mixed)).toContain('\ufffd');
    const valid = Buffer.from('\ufeff{"name":"佐藤 🙏 Ángel"}');
    expect(textOf(valid)).toBe(valid.toString('utf8'));
  });

  it('reads and answers booking questions, touching only the keys sent', async () => {
    const questions = await client.leads.bookingQuestions(leadId);
    const builtIns = questions.data.filter((q) => q.attributes.editable === false);
    expect(builtIns.map((q) => q.id)).toEqual(
      expect.arrayContaining([
        'utm_source',
        'utm_campaign',
        'utm_medium',
        'utm_term',
        'utm_content',
      ]),
    );
    const editable = questions.data.find((q) => q.attributes.editable === true);
    if (editable?.attributes.column_name) {
      const ok = await client.leads.answerBookingQuestions(leadId, {
        [editable.attributes.column_name]: 'Yes please',
      });
      expect(ok.meta.status).toBe('ok');
      const again = await client.leads.bookingQuestions(leadId);
      const answered = again.data.find((q) => q.id === editable.id);
      expect(answered?.attributes.value).toBe('Yes please');
    } else {
      const ok = await client.leads.answerBookingQuestions(leadId, {});
      expect(ok.meta.status).toBe('ok');
    }
  });

  it('pages over more than 1,000 leads without losing or repeating one', async () => {
    for (let i = 0; i < 1050; i++) {
      createLead(
        sb.ctx,
        sb.businessId,
        readLeadInput(sb.ctx, sb.businessId, {
          email: `bulk${i}@example.com`,
          lead_type: 'bulk-paging',
        }),
      );
    }
    const seen: number[] = [];
    let pages = 0;
    for await (const page of client.leads.pages({ lead_type: 'bulk-paging' }, { per: 100 })) {
      pages += 1;
      expect(page.reach).toEqual({ totalCount: 1050, reachable: 1050, hidden: 0 });
      seen.push(...page.items.map((l) => l.attributes.id));
    }
    expect(pages).toBe(11);
    expect(seen).toHaveLength(1050);
    expect(new Set(seen).size).toBe(1050);
    expect(await client.leads.count({ lead_type: 'bulk-paging' })).toBe(1050);
  });
});

describe('lead bookings', () => {
  it('adds, reads, updates, decorates and removes a booking of a lead', async () => {
    const lead = await client.leads.create({ email: 'robin@example.com', first_name: 'Robin' });
    const leadId = lead.data.attributes.id;
    const added = await client.leadBookings.addToLead(leadId, {
      event_type_id: ids.classic,
      starts_at_date: '2031-08-09',
      starts_at_time: '4:00 PM',
    });
    const bookingId = added.data.attributes.id;
    expect(added.data.type).toBe('lead_booking');
    expect(added.data.attributes.lead_id).toBe(leadId);
    expect(added.data.attributes.event_type_id).toBe(ids.classic);

    const updated = await client.leadBookings.update(bookingId, {
      starts_at_time: '6:30 PM',
      staff_id: sb.userId,
    });
    expect(updated.data.attributes.staff_id).toBe(sb.userId);
    const cleared = await client.leadBookings.update(bookingId, { staff_id: '' });
    expect(cleared.data.attributes.staff_id).toBeNull();

    const category = await client.addOnCategories.create({ name: 'Lighting' });
    const addOn = await client.addOns.create({
      add_on_category_id: category.data.attributes.id,
      name: 'Uplights',
      description: 'Colored uplighting',
      price: 80,
    });
    const leadAddOn = await client.leadBookings.addAddOn(bookingId, {
      add_on_id: addOn.data.attributes.id,
      quantity: 2,
    });
    expect(leadAddOn.data.attributes.quantity).toBe(2);

    const backdrop = await client.leadBookings.setBackdrop(bookingId, {
      photobooth_background_id: ids.backdrop,
    });
    expect(backdrop.meta.status).toBe('ok');

    const fetched = await client.leadBookings.get(bookingId, [
      'lead_add_ons',
      'photobooth_background',
    ]);
    expect(fetched.included?.map((i) => i.type)).toEqual(expect.arrayContaining(['lead_add_on']));
    const rel = fetched.data.relationships as Record<string, { data: unknown }> | undefined;
    expect(rel?.photobooth_background?.data).toMatchObject({ id: String(ids.backdrop) });

    expect((await client.leadBookings.removeBackdrop(bookingId)).meta.status).toBe('ok');
    const noBackdrop = await client.leadBookings.get(bookingId);
    expect(
      (noBackdrop.data.relationships as Record<string, { data: unknown }>).photobooth_background
        ?.data,
    ).toBeNull();

    const listed = await client.leadBookings.list({
      event_date_start: '2031-08-09',
      event_date_end: '2031-08-09',
    });
    expect(listed.data.map((b) => b.attributes.id)).toContain(bookingId);
    expect(
      await client.leadBookings.count({
        event_date_start: '2031-08-09',
        event_date_end: '2031-08-09',
      }),
    ).toBe(1);
    const paged: number[] = [];
    for await (const page of client.leadBookings.pages({}, { per: 1 }))
      paged.push(...page.items.map((b) => b.attributes.id));
    expect(paged).toContain(bookingId);

    expect((await client.leadBookings.remove(bookingId)).meta.status).toBe('ok');
    expect(await caught(client.leadBookings.get(bookingId))).toBeInstanceOf(NotFoundError);
  });
});

describe('events, event bookings and notes', () => {
  let eventId = 0;
  let eventBookingId = 0;

  it('creates a confirmed booking from MM-DD-YYYY and 12-hour times and reads it back', async () => {
    const created = await client.events.create({
      is_proposal: false,
      contact_type: 'New Customer',
      contact_name: 'Jordan Lee',
      contact_email: 'jordan@example.com',
      venue_name: 'Grand Hall',
      quick_event_bookings_attributes: quickEventBookings([
        { event_type_id: ids.classic, starts_at_date: '06-20-2031', starts_at_time: '5:00 PM' },
      ]),
    });
    const auto = created.data.attributes;
    eventId = auto.id;
    expect(auto.status).toBe('confirmed');
    expect(auto.booked_at).toEqual(expect.any(String));
    expect(auto.starts_at_date).toBe('06-20-2031');

    const event = await client.events.get(eventId);
    const attrs = event.data.attributes;
    expect(attrs.starts_at_date_iso8601).toBe('2031-06-20');
    expect(attrs.starts_at_time).toBe('5:00 PM');
    expect(attrs.starts_at).toMatch(/[+-]\d{2}:\d{2}$|Z$/);
    expect(typeof attrs.starting_balance_cents).toBe('number');
    const bookings =
      (event.data.relationships as Record<string, { data: { id: string }[] }>).event_bookings
        ?.data ?? [];
    expect(bookings).toHaveLength(1);
    eventBookingId = Number(bookings[0]!.id);
  });

  it('creates a reserved proposal (booked_at null) and converts a lead', async () => {
    const proposal = await client.events.create({
      is_proposal: true,
      proposal_date_reserved: true,
      contact_type: 'None',
      quick_event_bookings_attributes: {
        '0': { event_type_id: ids.classic, starts_at_date: '09-12-2031' },
      },
    });
    expect(proposal.data.attributes.status).toBe('proposal_date_reserved');
    expect(proposal.data.attributes.booked_at).toBeNull();

    const lead = await client.leads.create({ email: 'convert@example.com', first_name: 'Kim' });
    const converted = await client.events.create({
      is_proposal: false,
      contact_type: 'New Customer',
      contact_name: 'Kim Park',
      contact_email: 'convert@example.com',
      lead_id: lead.data.attributes.id,
      quick_event_bookings_attributes: quickEventBookings([
        { event_type_id: ids.classic, starts_at_date: '10-03-2031', starts_at_time: '11:00 AM' },
      ]),
    });
    expect(converted.data.attributes.status).toBe('confirmed');
    expect(
      (await client.leads.get(lead.data.attributes.id)).data.attributes.converted_to_event,
    ).toBe(true);
  });

  it('reads event bookings one by one, by date window, in pages and counted', async () => {
    const booking = await client.eventBookings.get(eventBookingId);
    expect(booking.data.type).toBe('event_booking');
    expect(booking.data.attributes.event_id).toBe(eventId);
    const window = { event_date_start: '2031-06-20', event_date_end: '2031-06-20' };
    const listed = await client.eventBookings.list(window);
    expect(listed.data.map((b) => b.attributes.id)).toEqual([eventBookingId]);
    expect(await client.eventBookings.count(window)).toBe(1);
    const paged: number[] = [];
    for await (const page of client.eventBookings.pages({}, { per: 1 }))
      paged.push(...page.items.map((b) => b.attributes.id));
    expect(paged.length).toBeGreaterThanOrEqual(3);
  });

  it('deletes a note only for its author', async () => {
    const mine = createEventNote(
      sb.ctx,
      sb.businessId,
      eventId,
      sb.userId,
      'Load in via the side door',
    );
    expect((await client.eventNotes.delete(eventId, mine.id)).meta.status).toBe('ok');
    expect(await caught(client.eventNotes.delete(eventId, mine.id))).toBeInstanceOf(NotFoundError);

    const other = sb.identity.createUser({
      businessId: sb.businessId,
      name: 'Sam Staff',
      email: 'sam@sandbox.example',
      role: 'admin',
      permissions: ['assigned_event_read', 'unassigned_event_read'],
    });
    const theirs = createEventNote(
      sb.ctx,
      sb.businessId,
      eventId,
      other.id,
      'Bring extension cords',
    );
    const error = await caught(client.eventNotes.delete(eventId, theirs.id));
    expect(error).toBeInstanceOf(PermissionError);
  });

  it('questionnaires: templates, attach, external, answers checked against the questionnaire', async () => {
    const templates = await client.questionnaires.templates.list();
    expect(templates.data.length).toBeGreaterThan(0);
    const titles = templates.data.map((t) => t.attributes.title ?? '');
    expect(titles).toEqual([...titles].sort((a, b) => a.localeCompare(b)));
    const withText = templates.data.find((t) =>
      t.attributes.data?.fieldGroups.some((g) => g.fields.some((f) => f.type === 'text_field')),
    );
    expect(withText).toBeDefined();
    const template = await client.questionnaires.templates.get(withText!.attributes.id);
    expect(template.data.attributes.data?.fieldGroups.length).toBeGreaterThan(0);

    const attached = await client.questionnaires.attachTemplate({
      event_id: eventId,
      questionnaire_template_id: template.data.attributes.id,
    });
    const questionnaireId = attached.data.attributes.id;
    expect(attached.data.attributes.kind).toBe('standard');

    const external = await client.questionnaires.createExternal({
      event_id: eventId,
      title: 'Venue form',
      external_url: 'forms.example.com/venue',
      provider: 'FormCo',
    });
    expect(external.data.attributes.kind).toBe('external');
    expect(external.data.attributes.external_url).toBe('https://forms.example.com/venue');
    expect(external.data.attributes.pdf_url).toBeNull();

    const listed = await client.questionnaires.list(eventId);
    expect(listed.data.map((q) => q.attributes.id)).toEqual(
      [questionnaireId, external.data.attributes.id].sort((a, b) => a - b),
    );

    const questionnaire = await client.questionnaires.get(questionnaireId);
    const fields = questionnaire.data.attributes.data?.fieldGroups.flatMap((g) => g.fields) ?? [];
    const textField = fields.find((f) => f.type === 'text_field');
    expect(textField).toBeDefined();
    const uuid = textField!.uuid;

    const ok = await client.questionnaires.updateAnswers(
      questionnaireId,
      answers.text(uuid, 'Alex & Sam'),
      {
        questionnaire,
      },
    );
    expect(ok.meta.status).toBe('ok');
    const stored = await client.questionnaires.get(questionnaireId);
    expect(stored.data.attributes.values?.[uuid]).toEqual([{ text: 'Alex & Sam' }]);

    // A wrong element name is caught before any request, naming the element.
    const before = totalRequests();
    const bad = await caught(
      client.questionnaires.updateAnswers(
        questionnaireId,
        { [uuid]: [{ dropdown: 'x' }] },
        { questionnaire },
      ),
    );
    expect(bad).toBeInstanceOf(RequestValidationError);
    expect(Object.keys((bad as RequestValidationError).fieldErrors)).toEqual([
      `values.${uuid}[0].dropdown`,
    ]);
    expect(totalRequests()).toBe(before);
    // Answers to an external questionnaire are refused locally too.
    const externalRefused = await caught(
      client.questionnaires.updateAnswers(external.data.attributes.id, answers.text(uuid, 'x'), {
        questionnaire: external.data,
      }),
    );
    expect(externalRefused).toBeInstanceOf(RequestValidationError);
    // Without the questionnaire the service is the judge: 422.
    const serverSide = await caught(
      client.questionnaires.updateAnswers(questionnaireId, { [uuid]: [{ dropdown: 'x' }] }),
    );
    expect(serverSide).toBeInstanceOf(ValidationError);
    // The structure alone is enough to validate.
    const data = questionnaire.data.attributes.data as unknown as QuestionnaireData;
    expect(
      await caught(
        client.questionnaires.updateAnswers(
          questionnaireId,
          { nope: [{ text: 'x' }] },
          { questionnaire: data },
        ),
      ),
    ).toBeInstanceOf(RequestValidationError);
  });

  it('suggestion lists: list and fetch with songs', async () => {
    const lists = await client.suggestionLists.list();
    expect(lists.data.length).toBeGreaterThan(0);
    const list = await client.suggestionLists.get(lists.data[0]!.attributes.id);
    expect(Array.isArray(list.data.attributes.songs)).toBe(true);
  });

  it('design templates and template selections (apps), with the key refused where apps only', async () => {
    const app = sb.admin.createApp({
      name: 'Design Studio',
      redirectUris: ['https://studio.example/callback'],
      permissions: ['lead_read', 'offerings_write', 'assigned_event_write'],
    });
    const installed = sb.admin.install({ appId: app.id });
    const appClient = clientFor(bearerAuth(() => Promise.resolve(installed.access_token)));

    const categories = await client.designTemplates.categories();
    expect(categories.data.length).toBeGreaterThan(0);
    const categoryId = categories.data[0]!.attributes.id;

    const created = await appClient.designTemplates.create({
      design_template_category_id: categoryId,
      name: 'Gold Frame',
      primary_image_url: 'https://studio.example/gold.png',
      number_of_photos: 3,
      design_category_tag_names: ['Wedding', 'Wedding'],
      design_category_layout_names: ['4x6 Strip'],
    });
    const templateId = created.data.attributes.id;
    expect(created.data.attributes.design_category_tag_names).toEqual(['Wedding']);

    const updated = await appClient.designTemplates.update(templateId, { name: 'Gold Frame II' });
    expect(updated.data.attributes.name).toBe('Gold Frame II');

    const listed = await client.designTemplates.list({
      design_template_category_id: categoryId,
      include: ['design_template_category', 'design_category_tags', 'design_category_layouts'],
    });
    expect(listed.data.map((d) => d.attributes.id)).toContain(templateId);
    expect(new Set(listed.included?.map((i) => i.type))).toEqual(
      new Set(['design_template_category', 'design_category_tag', 'design_category_layout']),
    );
    const layouts = await client.designTemplates.layouts({
      design_template_category_id: categoryId,
    });
    expect(layouts.data.map((l) => l.attributes.name)).toContain('4x6 Strip');

    expect(
      await caught(
        client.designTemplates.create({
          design_template_category_id: categoryId,
          name: 'By key',
          primary_image_url: 'https://studio.example/k.png',
        }),
      ),
    ).toBeInstanceOf(PermissionError);

    const selection = await appClient.templateSelections.create({
      event_booking_id: eventBookingId,
      design_id: templateId,
      user_id: sb.userId,
      template_name: 'Gold Frame II',
      template_image_url: 'https://studio.example/gold.png',
      account_number: 'A-100',
    });
    expect(selection).toEqual({ meta: { status: 'ok' } });
    // Passes our schema, fails the service's rules: an event booking that does not exist.
    const missing = await caught(
      appClient.templateSelections.create({
        event_booking_id: 99_999_999,
        design_id: templateId,
        user_id: sb.userId,
        template_name: 'Gold Frame II',
        template_image_url: 'https://studio.example/gold.png',
      }),
    );
    expect(missing).toBeInstanceOf(ValidationError);
    expect((missing as ValidationError).fieldErrors).toHaveProperty('event_booking_id');
  });
});

describe('appointments and availability', () => {
  it('creates, reads, lists, updates, cancels, restores, duplicates and deletes an appointment', async () => {
    const created = await client.appointments.create({
      guest_name: 'Taylor Fox',
      guest_email: 'taylor@example.com',
      starts_at_date: '2031-05-14',
      starts_at_time: '2:00 PM',
      length_in_minutes: 30,
      created_via: 'app',
    });
    const id = created.data.attributes.id;
    expect(created.data.attributes.created_via).toBe('app');

    const fetched = await client.appointments.get(id, { include: 'user_appointments' });
    expect(fetched.data.attributes.guest_email).toBe('taylor@example.com');
    expect(fetched.included?.every((i) => i.type === 'user_appointment')).toBe(true);

    const window = { start_date: '2031-05-14', end_date: '2031-05-14' };
    expect((await client.appointments.list(window)).data.map((a) => a.attributes.id)).toEqual([id]);
    expect(await client.appointments.count(window)).toBe(1);

    const updated = await client.appointments.update(id, {
      location: 'Studio B',
      starts_at_time: '3:00 PM',
    });
    expect(updated.data.attributes.location).toBe('Studio B');

    expect((await client.appointments.cancel(id)).data.attributes.canceled).toBe(true);
    expect((await client.appointments.uncancel(id)).data.attributes.canceled).toBe(false);

    const copy = await client.appointments.duplicate(id, {
      starts_at_date: '2031-05-21',
      starts_at_time: '10:00 AM',
    });
    expect(copy.data.attributes.id).not.toBe(id);
    expect(copy.data.attributes.guest_name).toBe('Taylor Fox');

    const questions = await client.appointments.bookingQuestions(id);
    expect(questions.data).toEqual([]);
    expect(
      (await client.appointments.updateBookingQuestions(id, { custom_questions: {} })).meta.status,
    ).toBe('ok');

    const paged: number[] = [];
    for await (const page of client.appointments.pages({}, { per: 1 }))
      paged.push(...page.items.map((a) => a.attributes.id));
    expect(paged).toEqual(expect.arrayContaining([id, copy.data.attributes.id]));

    expect((await client.appointments.delete(id)).meta.status).toBe('ok');
    expect(await caught(client.appointments.get(id))).toBeInstanceOf(NotFoundError);
  });

  it('answers the four availability lookups', async () => {
    const check = await client.availability.check({
      event_date: '2031-11-01',
      package_id: ids.classic,
    });
    expect(check.data).toBeDefined();
    const range = await client.availability.check({
      starts_at: '2031-11-01',
      ends_at: '2031-11-03',
    });
    expect(range.data).toBeDefined();

    const detailed = await client.availability.detailed({
      starts_at_date: '2031-11-01',
      starts_at_time: '5:00 PM',
      ends_at_time: '8:00 PM',
      package_id: ids.classic,
    });
    expect(typeof detailed.available).toBe('boolean');
    expect(Array.isArray(detailed.messages)).toBe(true);
    expect(Array.isArray(detailed.overlapping_bookings)).toBe(true);

    const slots = await client.availability.timeSlots({
      event_date: '2031-11-01',
      package_id: ids.classic,
      length_in_minutes: 120,
    });
    expect(slots.data.length).toBeGreaterThan(0);

    const calendar = ensureDefaultCalendar(sb.ctx, sb.businessId, sb.userId);
    const appointmentSlots = await client.availability.appointmentSlots({
      user_id: sb.userId,
      user_appointment_calendar_id: calendar.id,
      selected_date: '2031-11-03',
    });
    expect(appointmentSlots.data.length).toBeGreaterThan(0);
  });
});

describe('expenses', () => {
  it('creates custom and staff expenses, reads, updates and soft-deletes', async () => {
    const custom = await client.expenses.create({
      payee_type: 'custom',
      payee_value: 'Party Rentals Inc',
      payment_date: '2031-03-02',
      payment_method: 'Card',
      amount: 120.5,
      ref_no: 'INV-77',
    });
    const id = custom.data.attributes.id;
    expect(custom.data.attributes.payee_type).toBe('custom');

    const staff = await client.expenses.create({
      payee_type: 'staff',
      staff_id: sb.userId,
      payment_date: '2031-03-02',
      amount: 50,
      ref_no: 'PAY-1',
    });
    expect(staff.data.attributes.staff_id).toBe(sb.userId);

    expect((await client.expenses.get(id)).data.attributes.ref_no).toBe('INV-77');
    const updated = await client.expenses.update(id, { description: 'Tables and chairs' });
    expect(updated.data.attributes.description).toBe('Tables and chairs');
    expect(updated.data.attributes.ref_no).toBe('INV-77');
    expect((await client.expenses.delete(id)).meta.status).toBe('ok');
    expect(await caught(client.expenses.get(id))).toBeInstanceOf(NotFoundError);
  });
});

describe('error classes', () => {
  it('401: an unknown key and a revoked key give AuthenticationError with the reason', async () => {
    const unknown = await caught(clientFor(apiKeyAuth('ik_not_a_real_key')).leads.list());
    expect(unknown).toBeInstanceOf(AuthenticationError);
    expect((unknown as AuthenticationError).reason).toBe('api_key_invalid');
    expect((unknown as AuthenticationError).retryable).toBe(false);

    const { id, key } = sb.identity.createKey({ userId: sb.userId });
    const revokedClient = clientFor(apiKeyAuth(key));
    await revokedClient.leads.list();
    sb.identity.revokeKey(id);
    const revoked = await caught(revokedClient.leads.list());
    expect(revoked).toBeInstanceOf(AuthenticationError);
    expect((revoked as AuthenticationError).reason).toBe('api_key_revoked');
    expect((revoked as AuthenticationError).message).not.toContain(key);
  });

  it('403: a key narrower than the operation gives PermissionError', async () => {
    const { key } = sb.identity.createKey({ userId: sb.userId, permissions: ['lead_read'] });
    const narrow = clientFor(apiKeyAuth(key));
    await narrow.leads.list();
    const error = await caught(narrow.expenses.get(1));
    expect(error).toBeInstanceOf(PermissionError);
    expect((error as PermissionError).status).toBe(403);
    expect((error as PermissionError).operation).toBe('expenses.get');
  });

  it('404: an unknown id gives NotFoundError', async () => {
    const error = await caught(client.leads.get(987_654_321));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).retryable).toBe(false);
  });

  it('422: a body that passes our schema but breaks the service rules gives ValidationError per field', async () => {
    const error = await caught(
      client.leads.create({ email: 'ok@example.com', package_id: 987_654 }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fieldErrors).toHaveProperty('package_id');
    const expense = await caught(
      client.expenses.create({
        payee_type: 'staff',
        staff_id: 987_654,
        payment_date: '2031-01-01',
        amount: 1,
        ref_no: 'x',
      }),
    );
    expect((expense as ValidationError).fieldErrors).toHaveProperty('staff_id');
  });

  it('a body or query our schema refuses throws RequestValidationError before any request', async () => {
    const before = totalRequests();
    const cases: [Promise<unknown>, string][] = [
      [client.leads.create({ email: 'not-an-email' }), 'email'],
      [client.leads.create({ email: 'a@b.co', surprise: 1 } as never), '(body)'],
      [
        client.appointments.create({
          guest_name: 'X',
          guest_email: 'x@example.com',
          starts_at_date: '05-14-2031',
          starts_at_time: '2:00 PM',
          length_in_minutes: 30,
          created_via: 'app',
        }),
        'starts_at_date',
      ],
      [
        client.appointments.create({
          guest_name: 'X',
          guest_email: 'x@example.com',
          starts_at_date: '2031-05-14',
          starts_at_time: '14:00',
          length_in_minutes: 30,
          created_via: 'phone' as never,
        }),
        'created_via',
      ],
      [client.events.create({ contact_type: 'Somebody' as never }), 'contact_type'],
      [
        client.events.create({
          contact_type: 'None',
          quick_event_bookings_attributes: {
            '0': { event_type_id: 1, starts_at_date: '2031-06-20' },
          },
        }),
        'quick_event_bookings_attributes.0.starts_at_date',
      ],
      [
        client.expenses.create({
          payee_type: 'custom',
          payment_date: '2031-01-01',
          amount: 1,
          ref_no: 'r',
        }),
        'payee_value',
      ],
      [
        client.expenses.create({
          payee_type: 'staff',
          payment_date: '2031-01-01',
          amount: 1,
          ref_no: 'r',
        }),
        'staff_id',
      ],
      [client.leads.list({ per: 0 }), 'per'],
      [client.availability.timeSlots({ event_date: '2031-13-01', package_id: 1 }), 'event_date'],
      [
        client.templateSelections.create({
          event_booking_id: 1,
          design_id: 1,
          user_id: 1,
          template_name: '',
          template_image_url: 'https://x.example/a.png',
        }),
        'template_selection.template_name',
      ],
    ];
    for (const [promise, field] of cases) {
      const error = await caught(promise);
      expect(error, field).toBeInstanceOf(RequestValidationError);
      const fields = Object.keys((error as RequestValidationError).fieldErrors);
      if (field === '(body)') expect(fields.length).toBeGreaterThan(0);
      else expect(fields, field).toContain(field);
    }
    expect(totalRequests()).toBe(before);
  });

  it('429 with Retry-After, and the 403 rate-limit variant, give RateLimitedError', async () => {
    try {
      sb.ctx.rateLimiter.settings = { perSecond: 1, mode: '429' };
      const results = await Promise.allSettled([
        client.leads.list(),
        client.leads.list(),
        client.leads.list(),
      ]);
      const limited = results.flatMap((r) =>
        r.status === 'rejected' ? [r.reason as unknown] : [],
      );
      expect(limited.length).toBeGreaterThan(0);
      const first = limited[0] as RateLimitedError;
      expect(first).toBeInstanceOf(RateLimitedError);
      expect(first.status).toBe(429);
      expect(first.retryable).toBe(true);
      expect(first.retryAfterMs).toBeGreaterThanOrEqual(1000);

      sb.ctx.rateLimiter.settings = { perSecond: 1, mode: '403' };
      const results403 = await Promise.allSettled([
        client.leads.list(),
        client.leads.list(),
        client.leads.list(),
      ]);
      const limited403 = results403.flatMap((r) =>
        r.status === 'rejected' ? [r.reason as unknown] : [],
      );
      expect(limited403.length).toBeGreaterThan(0);
      expect(limited403[0]).toBeInstanceOf(RateLimitedError);
      expect((limited403[0] as RateLimitedError).status).toBe(403);
    } finally {
      sb.ctx.rateLimiter.settings = { perSecond: 0, mode: '429' };
    }
  });

  it('5xx gives a retryable ServerError', async () => {
    try {
      sb.ctx.faults.errorRate = 1;
      const error = await caught(client.leads.list());
      expect(error).toBeInstanceOf(ServerError);
      expect((error as ServerError).retryable).toBe(true);
    } finally {
      sb.ctx.faults.errorRate = 0;
    }
    expect((await client.leads.list()).meta.status).toBe('ok');
  });

  it('a closed port gives a retryable NetworkError', async () => {
    const port = await closedPort();
    const offline = createClient({
      baseUrl: `https://127.0.0.1:${port}/api/v1/`,
      auth: apiKeyAuth(sb.apiKey),
      ca,
    });
    const error = await caught(offline.leads.list());
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).retryable).toBe(true);
    expect((error as NetworkError).message).not.toContain(sb.apiKey);
  });

  it('a certificate this process does not trust gives a TlsTrustError that is not retried and names EBS_CA_FILE', async () => {
    // The sandbox's own certificate, without its CA: what a worker started without EBS_CA_FILE meets.
    const untrusting = createClient({ baseUrl: sb.baseUrl, auth: apiKeyAuth(sb.apiKey) });
    const error = await caught(untrusting.leads.list());
    expect(error).toBeInstanceOf(TlsTrustError);
    expect((error as TlsTrustError).retryable).toBe(false);
    expect((error as TlsTrustError).message).toMatch(
      /^leads\.list: the service's certificate is not trusted by this process \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\): .*EBS_CA_FILE/,
    );
    expect(inspect(error, { depth: Infinity, showHidden: true })).not.toContain(sb.apiKey);
  });

  it('a NetworkError keeps only the error code of its cause: no key or token when inspected', async () => {
    const port = await closedPort();
    const baseUrl = `https://127.0.0.1:${port}/api/v1/`;
    const bearer = 'eat_network_secret_token_41';
    const errors = [
      await caught(createClient({ baseUrl, auth: apiKeyAuth(sb.apiKey), ca }).leads.list()),
      await caught(
        createClient({ baseUrl, auth: bearerAuth(() => Promise.resolve(bearer)), ca }).leads.list(),
      ),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(NetworkError);
      const shown = inspect(error, { depth: Infinity, showHidden: true });
      expect(shown).toContain('ECONNREFUSED');
      expect(shown).not.toContain(sb.apiKey);
      expect(shown).not.toContain(bearer);
      expect(JSON.stringify((error as NetworkError).cause)).toBe('{"code":"ECONNREFUSED"}');
    }
  });
});

describe('bearer auth', () => {
  it('asks the token provider once for a fresh token after a 401, then succeeds', async () => {
    const app = sb.admin.createApp({
      name: 'Sync App',
      redirectUris: ['https://sync.example/callback'],
      permissions: ['lead_read'],
    });
    const installed = sb.admin.install({ appId: app.id });
    const requests: TokenRequest[] = [];
    // The cached access token was revoked server-side; the provider refreshes through OAuth.
    const stale = 'eat_stale_token_from_cache';
    const appClient = clientFor(
      bearerAuth(async (request) => {
        requests.push(request);
        if (!request.rejectedToken) return stale;
        const fresh = await refreshTokens({
          authUrl: sb.authUrl,
          clientId: app.client_id,
          refreshToken: installed.refresh_token,
          ca,
        });
        return fresh.accessToken;
      }),
    );
    const leads = await appClient.leads.list();
    expect(leads.meta.status).toBe('ok');
    expect(requests).toEqual([{}, { rejectedToken: stale }]);
    expect(sb.ctx.counters.snapshot().token_refreshes).toBeGreaterThanOrEqual(1);
  });

  it('gives up after one fresh token: a second 401 is an AuthenticationError; a dead grant is InvalidGrantError', async () => {
    const app = sb.admin.createApp({
      name: 'Gone App',
      redirectUris: ['https://gone.example/callback'],
      permissions: ['lead_read'],
    });
    const installed = sb.admin.install({ appId: app.id });
    sb.admin.disconnect(installed.grant_id);
    let calls = 0;
    const appClient = clientFor(
      bearerAuth(() => {
        calls += 1;
        return Promise.resolve(installed.access_token);
      }),
    );
    const error = await caught(appClient.leads.list());
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).reason).toBe('app_disconnected');
    expect(calls).toBe(2);

    const refresh = await caught(
      refreshTokens({
        authUrl: sb.authUrl,
        clientId: app.client_id,
        refreshToken: installed.refresh_token,
        ca,
      }),
    );
    expect(refresh).toBeInstanceOf(InvalidGrantError);
    expect((refresh as InvalidGrantError).retryable).toBe(false);
    expect((refresh as InvalidGrantError).message).not.toContain(installed.refresh_token);
  });
});

describe('reach limit', () => {
  let small: Sandbox;
  let smallClient: Client;
  beforeAll(async () => {
    small = await startSandbox({ reachLimit: 200, onInternalError: (e) => internalErrors.push(e) });
    smallClient = createClient({
      baseUrl: small.baseUrl,
      auth: apiKeyAuth(small.apiKey),
      ca: readFileSync(small.caFile ?? ''),
    });
    for (let i = 0; i < 300; i++) {
      createLead(
        small.ctx,
        small.businessId,
        readLeadInput(small.ctx, small.businessId, { email: `reach${i}@example.com` }),
      );
    }
  });
  afterAll(async () => {
    await small?.close();
  });

  it('fails with ReachLimitError before reading any item by default', async () => {
    const seen: unknown[] = [];
    const error = await caught(
      (async () => {
        for await (const page of smallClient.leads.pages({}, { per: 50, reachLimit: 200 }))
          seen.push(...page.items);
      })(),
    );
    expect(error).toBeInstanceOf(ReachLimitError);
    expect((error as ReachLimitError).reach).toEqual({
      totalCount: 300,
      reachable: 200,
      hidden: 100,
    });
    expect(seen).toHaveLength(0);
  });

  it('in truncate mode reads the reachable 200 and reports 100 hidden', async () => {
    const ids: number[] = [];
    let hidden = -1;
    for await (const page of smallClient.leads.pages(
      {},
      { per: 50, reachLimit: 200, onReachLimit: 'truncate' },
    )) {
      hidden = page.reach.hidden;
      ids.push(...page.items.map((l) => l.attributes.id));
    }
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    expect(hidden).toBe(100);
  });
});

describe('coverage', () => {
  it('called every operation of the route table through the client', () => {
    const missing = ROUTES.map((r) => r.id).filter((id) => !answered.has(id));
    expect(missing).toEqual([]);
  });
});
