import { Clock } from './clock.js';
import type { SandboxContext } from './context.js';
import type { StoredRecord } from './db.js';
import { Identity } from './identity.js';
import { PERMISSIONS } from './permissions.js';
import { addDays, businessTimeZone, clock12, dateOfMs, fromZoned, mdyOf, ymdOf } from './time.js';
import { createAddOn, createAddOnCategory } from './resources/add-ons.js';
import {
  cancelAppointment,
  createAppointment,
  createAppointmentCalendar,
  deleteAppointment,
  type AppointmentInput,
} from './resources/appointments.js';
import { createEventNote } from './resources/event-notes.js';
import type { EventAttrs } from './resources/events-model.js';
import { createEvent, updateEvent, type EventPatch } from './resources/events.js';
import { createExpense, type ExpenseInput } from './resources/expenses.js';
import { bulkLeadIndexing } from './resources/lead-index.js';
import { defaultBrand } from './resources/leads-model.js';
import type { PackageAttrs } from './resources/offerings.js';
import {
  attachQuestionnaire,
  ensurePlanningDefaults,
  type TemplateAttrs,
} from './resources/questionnaires.js';

import {
  ADD_ONS,
  CITIES,
  COMPANIES,
  EVENT_NOTES,
  EXPENSE_DESCRIPTIONS,
  LEAD_TYPES,
  LENGTHS,
  LOCATIONS,
  MESSAGES,
  NOTES,
  PAYEES,
  PAYMENT_METHODS,
  STAFF,
  STREETS,
  VENUES,
  emailFor,
  fullName,
  person,
  phone,
} from './seed-pools.js';
import {
  generateLeads,
  generateLeadsOnWorker,
  type Catalog,
  type ConvertibleLead,
  type LeadIds,
  type LeadJob,
  type LeadRows,
  type LeadRun,
} from './seed-leads.js';
import { Rng, shareOf } from './seed-rng.js';
import { DAY, SEED_EPOCH, epochDate } from './seed-times.js';

/**
 * Generated data for a new sandbox database: leads (with bookings), events, appointments,
 * expenses, notes and questionnaires with the variety a real business accumulates.
 *
 * Deterministic for a seed: every choice comes from a seeded PRNG (one stream per section, so
 * growing one count leaves the other sections' choices alone), and every timestamp is derived
 * from SEED_EPOCH instead of the wall clock — creators run against a frozen clock.
 *
 * Leads and lead bookings, the bulk of a big run, come as ready rows from seed-leads.ts: on a
 * worker thread for big runs, so building and stringifying them overlaps this thread's
 * inserts. They go in batch by batch through one prepared statement inside one transaction;
 * the leads module's list and search tables are written alongside from the same attributes
 * (its bulk path, with its triggers off). Everything else is made by the resource modules'
 * creators.
 */

export interface SeedOptions {
  /** Leads to generate (default 0). */
  leads?: number;
  /** Events to generate (default: one per 25 leads, at most 500). */
  events?: number;
  /** Same seed, same data (default 1). */
  seed?: string | number;
  /**
   * Skewed leads (seed-skew.ts): most from one origin and one mail provider, few with a lead
   * type or source, Zipf-distributed names. Default: values spread evenly.
   */
  skew?: boolean;
  /**
   * Generate leads on a worker thread from this many (default 10,000; 0: always, Infinity:
   * never). The rows are the same either way; below it a worker's start-up costs more than
   * it saves.
   */
  workerFrom?: number;
  /** Called about every PROGRESS_EVERY records written. */
  onProgress?: (progress: SeedProgress) => void;
}

export interface SeedProgress {
  records: number;
  leads: number;
  totalLeads: number;
}

export interface SeedSummary {
  seed: string;
  leads: number;
  leadBookings: number;
  events: number;
  /** Those the API lists: the soft-deleted ones are counted in `deleted`. */
  appointments: number;
  expenses: number;
  eventNotes: number;
  questionnaires: number;
  /** Appointments and expenses seeded soft-deleted: gone from the API, kept in the store. */
  deleted: number;
  /** Rows added to the record store, everything included. */
  records: number;
  ms: number;
}

export { SEED_EPOCH } from './seed-times.js';
const DEFAULT_SEED = '1';
const PROGRESS_EVERY = 25_000;
const MAX_DEFAULT_EVENTS = 500;
const WORKER_FROM = 10_000;

/** The number of events generated when only a lead count is given. */
function defaultEventCount(leads: number): number {
  return Math.min(MAX_DEFAULT_EVENTS, Math.ceil(leads / 25));
}

/** The creators read "now" from ctx.clock; seeding moves this one by hand. */
class FrozenClock extends Clock {
  at = SEED_EPOCH;
  override now(): number {
    return this.at;
  }
}

// ---------------------------------------------------------------------------------------------
// Bulk leads

const LEAD_SEQUENCES = ['lead', 'lead_booking', 'lead_add_on'] as const;

function seedLeads(
  ctx: SandboxContext,
  businessId: number,
  job: Omit<LeadJob, 'brandId' | 'lastIds'>,
  workerFrom: number,
  progress: (records: number, leads: number) => void,
): LeadRun {
  const sequence = ctx.db.prepare('SELECT value FROM sequences WHERE name = ?');
  const lastIds = {} as LeadIds;
  for (const name of LEAD_SEQUENCES) {
    lastIds[name] = (sequence.get(name) as { value: number } | undefined)?.value ?? 0;
  }
  const full: LeadJob = { ...job, brandId: defaultBrand(ctx, businessId).id, lastIds };
  const insert = ctx.db.prepare(
    'INSERT INTO records (type, id, business_id, parent_id, attrs) VALUES (?, ?, ?, ?, ?)',
  );
  // The list and search tables are filled from the attributes in hand, which is much
  // cheaper than their triggers (or a copy) re-reading each row's JSON.
  const run = bulkLeadIndexing(ctx.db, businessId, (writeSide) => {
    const take = (rows: LeadRows, done: { records: number; leads: number }) => {
      rows.ids.forEach((id, k) => {
        insert.run(rows.types[k], id, businessId, rows.parents[k], rows.json[k]);
      });
      writeSide(rows.side);
      progress(done.records, done.leads);
    };
    return job.count >= workerFrom ? generateLeadsOnWorker(full, take) : generateLeads(full, take);
  });
  const move = ctx.db.prepare(
    `INSERT INTO sequences (name, value) VALUES (?, ?)
     ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)`,
  );
  for (const name of LEAD_SEQUENCES) {
    move.run(name, run.lastIds[name]);
    ctx.records.markWritten(name);
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
// Events and the rest, through the resource modules' creators

function seedCatalogExtras(ctx: SandboxContext, businessId: number, clock: FrozenClock): Catalog {
  clock.at = SEED_EPOCH - 800 * DAY;
  const identity = new Identity(ctx.db, clock);
  const staff = STAFF.map((s) => {
    const user = identity.createUser({
      businessId,
      name: s.name,
      email: s.email,
      role: 'staff',
      permissions: PERMISSIONS,
    });
    return { id: user.id, name: user.name };
  });
  const category = createAddOnCategory(ctx, businessId, { name: 'Extras' });
  const addOns = ADD_ONS.map((a) =>
    createAddOn(ctx, businessId, { add_on_category_id: category.id, ...a }),
  );
  const packages = ctx.records.list<PackageAttrs>('package', businessId).records;
  const named = (type: string) =>
    new Map(
      ctx.records
        .list<{ id: number; name: string }>(type, businessId)
        .records.map((r) => [r.id, r.attrs.name] as const),
    );
  return {
    packages,
    serviceNames: named('service'),
    groupNames: named('package_group'),
    addOns,
    staff,
  };
}

function seedEvents(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  convertible: ConvertibleLead[],
): StoredRecord<EventAttrs>[] {
  const rng = new Rng(`${seed}:events`);
  const out: StoredRecord<EventAttrs>[] = [];
  const customers: number[] = [];
  const backdrops = ctx.records.list('photobooth_background', businessId).records.map((r) => r.id);
  const canceled = rng.sample(count, shareOf(count, 0.06));
  const postponed = rng.sample(count, shareOf(count, 0.04));
  // Status per event; small runs still get one of each.
  const statuses = Array.from({ length: count }, () =>
    rng.weighted([
      ['confirmed', 65],
      ['proposal_date_reserved', 15],
      ['proposal', 20],
    ] as const),
  );
  if (count >= 3) {
    statuses[0] = 'confirmed';
    statuses[1] = 'proposal';
    statuses[2] = 'proposal_date_reserved';
  }

  for (let k = 0; k < count; k += 1) {
    const status = statuses[k] ?? 'confirmed';
    const proposal = status !== 'confirmed';
    const body: Record<string, unknown> = {
      is_proposal: proposal,
      proposal_date_reserved: status === 'proposal_date_reserved',
    };
    let start: number;
    let createdMs: number;
    if (convertible.length > 0 && rng.chance(0.3)) {
      // Converted from a lead: the lead's booking, contact and marketing fields carry over.
      const index = rng.int(0, convertible.length - 1);
      const lead = convertible[index];
      const last = convertible.pop();
      if (!lead || !last) continue;
      if (index < convertible.length) convertible[index] = last;
      body.lead_id = lead.id;
      body.contact_type = lead.named ? 'New Customer' : 'None';
      start = lead.startMs;
      createdMs = Math.min(SEED_EPOCH, lead.createdMs + rng.int(1, 20) * DAY, start);
    } else {
      const date = epochDate(rng.int(-730, 730));
      const minutes = rng.int(20, 40) * 30;
      const entries: Record<string, unknown>[] = [];
      const bookings = rng.chance(0.15) ? 2 : 1;
      for (let b = 0; b < bookings; b += 1) {
        const pkg = rng.pick(catalog.packages);
        const entry: Record<string, unknown> = {
          event_type_id: pkg.id,
          starts_at_date: mdyOf(b === 0 ? date : addDays(date, rng.int(0, 1))),
          starts_at_time: clock12(b === 0 ? minutes : Math.min(minutes + 240, 1380)),
        };
        if (pkg.attrs.custom && rng.chance(0.7)) entry.one_off_custom_title = 'Custom 360° Booth';
        if (pkg.attrs.price_method !== 'daily') {
          if (rng.chance(0.1)) {
            entry.ends_at_time = clock12(Math.min(minutes + rng.int(4, 10) * 30, 1410));
          } else if (rng.chance(0.2)) {
            entry.length_in_minutes = rng.pick(LENGTHS);
          }
        }
        if (pkg.attrs.service_name === 'Photo Booth' && backdrops.length > 0 && rng.chance(0.4)) {
          entry.backdrop_id = rng.pick(backdrops);
        }
        if (catalog.addOns.length > 0 && rng.chance(0.3)) {
          entry.add_on_ids = [...rng.sample(catalog.addOns.length, rng.int(1, 2))]
            .sort((a, b) => a - b)
            .flatMap((i) => catalog.addOns[i]?.id ?? []);
        }
        entries.push(entry);
      }
      body.quick_event_bookings_attributes = Object.fromEntries(
        entries.map((e, i) => [String(i), e]),
      );
      const contactType =
        customers.length > 0 && rng.chance(0.1)
          ? 'Existing Customer'
          : rng.chance(0.6)
            ? 'New Customer'
            : 'None';
      body.contact_type = contactType;
      if (contactType === 'Existing Customer') body.customer_user_id = rng.pick(customers);
      else {
        const who = person(rng);
        const name = fullName(who);
        const required = contactType === 'New Customer';
        if (name || required) body.contact_name = name || 'Guest';
        if (required || rng.chance(0.7)) body.contact_email = emailFor(rng, who, 900_000 + k);
        if (rng.chance(0.6)) body.contact_phone = phone(rng);
        if (rng.chance(0.1)) body.contact_company_name = rng.pick(COMPANIES);
      }
      if (rng.chance(0.7)) {
        const [city, state, zip] = rng.pick(CITIES);
        body.venue_name = rng.pick(VENUES);
        body.venue_city = city;
        body.venue_state = state;
        if (rng.chance(0.8)) {
          body.venue_address = `${rng.int(1, 9999)} ${rng.pick(STREETS)}`;
          body.venue_zip = zip;
        }
      }
      start = Date.UTC(date.year, date.month - 1, date.day, 0, minutes);
      createdMs = Math.min(SEED_EPOCH, start - rng.int(14, 365) * DAY + rng.int(0, 86_399) * 1000);
    }
    if (rng.chance(0.4)) body.add_tax = true;
    if (rng.chance(0.1)) body.add_travel = true;
    if (rng.chance(0.2))
      body.public_notes = 'Please arrive 30 minutes early — the venue is strict.';
    if (rng.chance(0.2)) body.private_notes = rng.pick(NOTES);
    if (rng.chance(0.05)) body.custom_title = `${rng.pick(LEAD_TYPES)} — ${rng.pick(VENUES)}`;
    if (!proposal && rng.chance(0.5)) body.paid_amount = rng.pick([100, 250, 500, 799.5]);
    if (rng.chance(0.08)) body.total_amount = rng.int(50, 400) * 10;
    if (rng.chance(0.08)) body.custom_deposit_amount = rng.pick([100, 200, 300]);
    if (!proposal && rng.chance(0.5)) body.signature_collected = true;
    if (proposal && rng.chance(0.5)) {
      body.proposal_valid_through = ymdOf(dateOfMs(createdMs + rng.int(14, 60) * DAY));
    }

    clock.at = createdMs;
    // A seeded token, not createEvent's random one, keeps URLs stable.
    let event = createEvent(ctx, businessId, body, {
      createdAt: new Date(createdMs).toISOString(),
      token: rng.hex(24),
    });
    for (const user of ctx.records.children<{ user_id: number }>('event_user', event.id)) {
      customers.push(user.attrs.user_id);
    }
    const eventStart = event.attrs.starts_at ? Date.parse(event.attrs.starts_at) : start;
    const patch: EventPatch = {};
    if (canceled.has(k)) patch.canceled = true;
    else if (postponed.has(k)) patch.postponed = true;
    else if (!proposal && eventStart < SEED_EPOCH && rng.chance(0.7)) patch.completed = true;
    if (catalog.staff.length > 0 && rng.chance(0.4)) {
      patch.assigned_staff_ids = [
        ...new Set([...event.attrs.assigned_staff_ids, rng.pick(catalog.staff).id]),
      ];
    }
    if (Object.keys(patch).length > 0) {
      clock.at = Math.min(SEED_EPOCH, Math.max(createdMs, eventStart) + DAY);
      event = updateEvent(ctx, event, patch);
    }
    out.push(event);
  }
  return out;
}

function seedAppointments(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  ownerId: number,
  timeZone: string,
): number {
  if (count === 0) return 0;
  const rng = new Rng(`${seed}:appointments`);
  const hosts = [ownerId, ...catalog.staff.map((s) => s.id)];
  clock.at = SEED_EPOCH - 800 * DAY;
  const calendar = createAppointmentCalendar(ctx, businessId, { user_id: ownerId });
  const canceled = rng.sample(count, shareOf(count, 0.1));
  const deleted = rng.sample(count, shareOf(count, 0.04));
  let deletedCount = 0;
  for (let k = 0; k < count; k += 1) {
    const who = person(rng);
    const date = epochDate(rng.int(-365, 365));
    const startsAtMs = fromZoned(date, rng.int(18, 33) * 30, timeZone);
    const createdVia = rng.weighted([
      ['widget', 5],
      ['app', 3],
      ['quick_add', 2],
    ] as const);
    const input: AppointmentInput = {
      guest_name: fullName(who) || 'Guest',
      guest_email: emailFor(rng, who, 800_000 + k),
      guest_phone: rng.chance(0.6) ? phone(rng) : null,
      startsAtMs,
      length_in_minutes: rng.pick([30, 30, 45, 60]),
      user_id: rng.pick(hosts),
      user_appointment_calendar_id: createdVia === 'widget' ? calendar.id : null,
      created_via: createdVia,
      location: rng.chance(0.7) ? rng.pick(LOCATIONS) : null,
      private_notes: rng.chance(0.2) ? rng.pick(NOTES) : null,
      message: rng.chance(0.4) ? rng.pick(MESSAGES) : null,
      custom_title: rng.chance(0.1) ? 'Tasting & walkthrough' : null,
      event_date: rng.chance(0.4) ? ymdOf(addDays(date, rng.int(30, 300))) : null,
      venue_name: rng.chance(0.3) ? rng.pick(VENUES) : null,
      custom_answers: rng.chance(0.3) ? { occasion: rng.pick(LEAD_TYPES) } : {},
    };
    if (rng.chance(0.15)) {
      input.additional_guests = [
        { name: fullName(person(rng)) || null, email: `plus${k}@example.com` },
      ];
    }
    clock.at = Math.min(SEED_EPOCH, startsAtMs - rng.int(1, 30) * DAY);
    const record = createAppointment(ctx, businessId, input);
    if (canceled.has(k)) {
      clock.at = Math.min(SEED_EPOCH, clock.at + rng.int(1, 48) * 3_600_000);
      cancelAppointment(ctx, record);
    } else if (deleted.has(k)) {
      deleteAppointment(ctx, record);
      deletedCount += 1;
    }
  }
  return deletedCount;
}

function seedExpenses(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  events: readonly StoredRecord<EventAttrs>[],
): number {
  const rng = new Rng(`${seed}:expenses`);
  const deleted = rng.sample(count, shareOf(count, 0.08, 1, 2));
  for (let k = 0; k < count; k += 1) {
    const date = epochDate(rng.int(-730, -1));
    const toStaff = catalog.staff.length > 0 && rng.chance(0.3);
    const input: ExpenseInput = {
      payee_type: toStaff ? 'staff' : 'custom',
      payee_value: toStaff ? null : rng.pick(PAYEES),
      staff_id: toStaff ? rng.pick(catalog.staff).id : null,
      payment_date: ymdOf(date),
      payment_method: rng.chance(0.85) ? rng.pick(PAYMENT_METHODS) : null,
      amount_cents: rng.int(5, 2500) * 100 + rng.pick([0, 0, 50, 99]),
      ref_no: rng.chance(0.7) ? `EXP-${1000 + k}` : `CHK #${rng.int(100, 9999)}`,
      description: rng.chance(0.7) ? rng.pick(EXPENSE_DESCRIPTIONS) : null,
      expense_category_id: null,
      event_id: events.length > 0 && rng.chance(0.4) ? rng.pick(events).id : null,
    };
    clock.at = Date.UTC(date.year, date.month - 1, date.day, 17, rng.int(0, 59));
    const record = createExpense(ctx, businessId, input);
    if (deleted.has(k)) ctx.records.softDelete(record, ctx.clock.iso());
  }
  return deleted.size;
}

function seedNotesAndQuestionnaires(
  ctx: SandboxContext,
  businessId: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  ownerId: number,
  list: readonly StoredRecord<EventAttrs>[],
): { notes: number; questionnaires: number } {
  if (list.length === 0) return { notes: 0, questionnaires: 0 };
  const rng = new Rng(`${seed}:planning`);
  const authors = [ownerId, ...catalog.staff.map((s) => s.id)];
  const noteCount = Math.min(2000, Math.max(3, Math.ceil(list.length / 8)));
  for (let k = 0; k < noteCount; k += 1) {
    const event = rng.pick(list);
    clock.at = Math.min(
      SEED_EPOCH,
      Date.parse(event.attrs.created_at) + rng.int(1, 72) * 3_600_000,
    );
    createEventNote(ctx, businessId, event.id, rng.pick(authors), rng.pick(EVENT_NOTES));
  }

  clock.at = SEED_EPOCH - 800 * DAY;
  ensurePlanningDefaults(ctx, businessId);
  // The default templates' question uuids are random; seeded ones keep answers comparable.
  const templates = ctx.records.list<TemplateAttrs>('questionnaire_template', businessId).records;
  const seeded = templates.map((t) =>
    ctx.records.update(t, {
      data: {
        ...t.attrs.data,
        fieldGroups: t.attrs.data.fieldGroups.map((g) => ({
          ...g,
          fields: g.fields.map((f) => ({ ...f, uuid: rng.uuid() })),
        })),
      },
    }),
  );
  const confirmed = list.filter((e) => e.attrs.status === 'confirmed' && !e.attrs.canceled);
  const count = Math.min(confirmed.length, Math.max(2, Math.ceil(list.length / 200)));
  const targets = [...rng.sample(confirmed.length, count)].sort((a, b) => a - b);
  let made = 0;
  for (const index of targets) {
    const event = confirmed[index];
    const template = seeded[made % Math.max(1, seeded.length - 1)];
    if (!event || !template) continue;
    clock.at = Math.min(SEED_EPOCH, Date.parse(event.attrs.created_at) + DAY);
    attachQuestionnaire(ctx, businessId, event.id, template);
    made += 1;
  }
  return { notes: noteCount, questionnaires: made };
}

// ---------------------------------------------------------------------------------------------

/**
 * Fills a business with generated data, in one transaction. Meant for a new database: the
 * sandbox calls it only when it has just created the default business.
 */
export function seedBusiness(
  ctx: SandboxContext,
  businessId: number,
  ownerUserId: number,
  options: SeedOptions,
): SeedSummary {
  const started = performance.now();
  const seed = String(options.seed ?? DEFAULT_SEED);
  const leadCount = options.leads ?? 0;
  const eventCount = options.events ?? defaultEventCount(leadCount);
  const clock = new FrozenClock();
  const seedCtx: SandboxContext = { ...ctx, clock };
  const timeZone = businessTimeZone(ctx.db, businessId);
  const countRecords = () =>
    (ctx.db.prepare('SELECT count(*) AS n FROM records').get() as { n: number }).n;
  const before = countRecords();
  let lastReport = 0;
  const report = (records: number, leads: number) => {
    if (!options.onProgress || records - lastReport < PROGRESS_EVERY) return;
    lastReport = records;
    options.onProgress({ records, leads, totalLeads: leadCount });
  };

  const summary = ctx.db.transaction((): Omit<SeedSummary, 'records' | 'ms'> => {
    if (leadCount === 0 && eventCount === 0) {
      return {
        seed,
        leads: 0,
        leadBookings: 0,
        events: 0,
        appointments: 0,
        expenses: 0,
        eventNotes: 0,
        questionnaires: 0,
        deleted: 0,
      };
    }
    const catalog = seedCatalogExtras(seedCtx, businessId, clock);
    const leads = seedLeads(
      seedCtx,
      businessId,
      { seed, count: leadCount, timeZone, catalog, ...(options.skew ? { skew: true } : {}) },
      options.workerFrom ?? WORKER_FROM,
      report,
    );
    const events = seedEvents(
      seedCtx,
      businessId,
      eventCount,
      seed,
      clock,
      catalog,
      leads.convertible,
    );
    const appointmentCount = Math.min(
      5000,
      Math.max(6, Math.ceil(eventCount / 2) + Math.ceil(leadCount / 1000)),
    );
    const deletedAppointments = seedAppointments(
      seedCtx,
      businessId,
      appointmentCount,
      seed,
      clock,
      catalog,
      ownerUserId,
      timeZone,
    );
    const expenseCount = Math.min(5000, Math.max(4, Math.ceil(eventCount / 2)));
    const deletedExpenses = seedExpenses(
      seedCtx,
      businessId,
      expenseCount,
      seed,
      clock,
      catalog,
      events,
    );
    const planning = seedNotesAndQuestionnaires(
      seedCtx,
      businessId,
      seed,
      clock,
      catalog,
      ownerUserId,
      events,
    );
    return {
      seed,
      leads: leads.leads,
      leadBookings: leads.bookings,
      events: events.length,
      appointments: appointmentCount - deletedAppointments,
      expenses: expenseCount - deletedExpenses,
      eventNotes: planning.notes,
      questionnaires: planning.questionnaires,
      deleted: deletedAppointments + deletedExpenses,
    };
  })();
  return {
    ...summary,
    records: countRecords() - before,
    ms: Math.round(performance.now() - started),
  };
}
