import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import {
  addBookingSideRows,
  addLeadSideRows,
  emptySideRows,
  type LeadSideRows,
} from './resources/lead-index.js';
import {
  DEFAULT_PREVIEW_IMAGE,
  type LeadAddOnAttrs,
  type LeadBookingAttrs,
} from './resources/lead-bookings-model.js';
import { scheduleOf } from './resources/lead-bookings.js';
import {
  CONTACT_PREFERENCES,
  INDOOR_OUTDOOR,
  LEAD_SOURCES,
  type CreateLeadOptions,
  type LeadInput,
} from './resources/leads-model.js';
import { newLeadAttrs } from './resources/leads.js';
import type { AddOnAttrs } from './resources/add-ons.js';
import type { PackageAttrs } from './resources/offerings.js';
import type { StoredRecord } from './db.js';
import { Rng } from './seed-rng.js';
import {
  COMPANIES,
  CITIES,
  LEAD_TYPES,
  LENGTHS,
  MESSAGES,
  NOTES,
  ORIGINS,
  STREETS,
  SUBJECTS,
  TIMES_CONTACTED,
  UTM_CAMPAIGNS,
  UTM_CONTENTS,
  UTM_MEDIUMS,
  UTM_SOURCES,
  UTM_TERMS,
  VENUES,
  emailFor,
  person,
  phone,
} from './seed-pools.js';
import { SkewedLeads } from './seed-skew.js';
import { DAY, SEED_EPOCH } from './seed-times.js';
import { addDays, clock12, dateOfMs, ymdOf, zonedIso, type DateParts } from './time.js';

/**
 * The bulk of a big generated run: leads with their bookings and add-ons, made as rows
 * ready to insert. A pure function of its job (plain data, so it can run on a worker
 * thread): the same job gives the same rows, wherever it runs.
 *
 * It bypasses the per-record creators (which pay for a time-zone lookup, Intl formatting
 * and a sequence round trip per record): attributes come from the leads module's pure
 * builder (newLeadAttrs) and a booking builder that mirrors addLeadBooking's, with ids
 * counted on from the sequences' last values.
 */

export interface Catalog {
  packages: StoredRecord<PackageAttrs>[];
  serviceNames: Map<number, string>;
  groupNames: Map<number, string>;
  addOns: StoredRecord<AddOnAttrs>[];
  staff: { id: number; name: string }[];
}

/** Everything the generator reads. */
export interface LeadJob {
  seed: string;
  count: number;
  brandId: number;
  timeZone: string;
  catalog: Catalog;
  /** Each sequence's value before the run; ids continue from there. */
  lastIds: LeadIds;
  /** Skewed data (seed-skew.ts) instead of evenly spread values. */
  skew?: boolean;
}

export interface LeadIds {
  lead: number;
  lead_booking: number;
  lead_add_on: number;
}

/**
 * A batch of generated records in insertion order, and their side-table rows. Flat arrays,
 * because a worker sends the batch over: nested per-record tuples cost several times more
 * to copy between threads (and joining the JSON into one string more still).
 */
export interface LeadRows {
  types: string[];
  ids: number[];
  parents: (number | null)[];
  /** The records' attributes as JSON. */
  json: string[];
  side: LeadSideRows;
}

export interface LeadRun {
  leads: number;
  bookings: number;
  records: number;
  convertible: ConvertibleLead[];
  lastIds: LeadIds;
}

/** The input fields a generated lead may or may not get, all null. */
const OPTIONAL_INPUT = {
  venue_name: null,
  venue_address: null,
  venue_city: null,
  venue_state: null,
  venue_zip: null,
  utm_source: null,
  utm_medium: null,
  utm_campaign: null,
  utm_term: null,
  utm_content: null,
  ad_click_id: null,
  contact_form_id: null,
  next_follow_up_on: null,
  staff_id: null,
  referred_by_user_id: null,
  event_date: null,
  event_time: null,
  length_in_minutes: null,
  package_id: null,
  service_id: null,
} as const satisfies Partial<LeadInput>;

class Batch implements LeadRows {
  types: string[] = [];
  ids: number[] = [];
  parents: (number | null)[] = [];
  json: string[] = [];
  side = emptySideRows();

  add(type: string, id: number, parent: number | null, attrs: object): void {
    this.types.push(type);
    this.ids.push(id);
    this.parents.push(parent);
    this.json.push(JSON.stringify(attrs));
  }
}

/** A converted-to-be lead: one with a dated package booking, not spam. */
export interface ConvertibleLead {
  id: number;
  createdMs: number;
  startMs: number;
  named: boolean;
}

interface BookingPlan {
  pkg: StoredRecord<PackageAttrs> | undefined;
  serviceId: number | null;
  date: DateParts | null;
  minutes: number | null;
  length: number | null;
  staff: { id: number; name: string } | undefined;
}

/**
 * Generates the job's leads, handing `flush` the rows of every `batch` leads (and the
 * rest at the end) with the counts so far.
 */
export function generateLeads(
  job: LeadJob,
  flush: (rows: LeadRows, done: { records: number; leads: number }) => void,
  batch = 500,
): LeadRun {
  const rng = new Rng(`${job.seed}:leads`);
  const { count, catalog, brandId, timeZone } = job;
  const ids = { ...job.lastIds };
  let batchRows = new Batch();
  const convertible: ConvertibleLead[] = [];
  const serviceIds = [...catalog.serviceNames.keys()];
  const recentEmails: string[] = [];
  let records = 0;
  let bookings = 0;
  const span = 730 * DAY;
  const firstMs = SEED_EPOCH - span;
  // The uniform draws below keep their order when this is off: the same seed, the same data.
  const skewed = job.skew ? new SkewedLeads() : undefined;

  const writeBooking = (
    leadId: number,
    createdMs: number,
    plan: BookingPlan,
  ): { id: number; startMs: number | null } => {
    const id = (ids.lead_booking += 1);
    const pkg = plan.pkg?.attrs;
    const serviceId = pkg?.service_id ?? plan.serviceId;
    // The shape addLeadBooking writes for a lead created with these fields.
    const requested = {
      starts_at_minutes: plan.minutes,
      length_in_minutes: plan.length ?? pkg?.default_length_in_minutes ?? null,
      length_in_days: null,
    };
    const attrs: LeadBookingAttrs = {
      id,
      lead_id: leadId,
      brand_id: brandId,
      event_type_id: pkg?.id ?? null,
      event_category_id: serviceId,
      package_group_id: pkg?.package_group_id ?? null,
      name: pkg?.name ?? null,
      service_name: serviceId === null ? null : (catalog.serviceNames.get(serviceId) ?? null),
      package_group_name: pkg ? (catalog.groupNames.get(pkg.package_group_id) ?? null) : null,
      starts_at_date: plan.date === null ? null : ymdOf(plan.date),
      starts_at_minutes: plan.minutes,
      ...scheduleOf(plan.date, requested, timeZone),
      length_in_minutes: requested.length_in_minutes,
      length_in_days: null,
      units: null,
      package_unit_range_id: null,
      staff_id: plan.staff?.id ?? null,
      staff_name: plan.staff?.name ?? null,
      photobooth_background_id: null,
      preview_image: pkg?.preview_image ?? DEFAULT_PREVIEW_IMAGE,
      created_at: new Date(createdMs).toISOString(),
    };
    batchRows.add('lead_booking', id, leadId, attrs);
    addBookingSideRows(batchRows.side, id, attrs);
    records += 1;
    bookings += 1;
    if (pkg && catalog.addOns.length > 0 && rng.chance(0.08)) {
      const addOn = rng.pick(catalog.addOns);
      const addOnId = (ids.lead_add_on += 1);
      const line: LeadAddOnAttrs = {
        id: addOnId,
        lead_booking_id: id,
        add_on_id: addOn.id,
        name: addOn.attrs.name,
        quantity: rng.chance(0.8) ? 1 : rng.int(2, 4),
        price_cents: addOn.attrs.price_cents,
      };
      batchRows.add('lead_add_on', addOnId, id, line);
      records += 1;
    }
    return { id, startMs: attrs.starts_at === null ? null : Date.parse(attrs.starts_at) };
  };

  for (let n = 0; n < count; n += 1) {
    const id = (ids.lead += 1);
    // Leads arrive steadily over the two years before the epoch, with some jitter.
    const jitter = rng.int(-6 * 3600, 6 * 3600) * 1000;
    const createdMs = Math.min(
      SEED_EPOCH - 1000,
      Math.max(firstMs, firstMs + Math.floor((span * n) / count) + jitter),
    );
    const who = skewed ? skewed.person(rng) : person(rng);
    const repeat = recentEmails.length > 0 && rng.chance(0.02);
    const email = repeat
      ? rng.pick(recentEmails)
      : skewed
        ? skewed.email(rng, who)
        : emailFor(rng, who, id);
    if (!repeat) {
      if (recentEmails.length >= 50) recentEmails[n % 50] = email;
      else recentEmails.push(email);
    }
    const leadType = skewed ? skewed.leadType(rng) : rng.chance(0.85) ? rng.pick(LEAD_TYPES) : null;
    const origin = skewed ? skewed.origin(rng) : rng.weighted(ORIGINS);
    const input: LeadInput = {
      email: rng.chance(0.03) ? email.toUpperCase() : email,
      first_name: who.first,
      last_name: who.last,
      company_name: rng.chance(leadType === 'Corporate Event' ? 0.7 : 0.06)
        ? rng.pick(COMPANIES)
        : null,
      phone: skewed ? skewed.phone(rng, who) : rng.chance(0.7) ? phone(rng) : null,
      lead_source: skewed ? skewed.source(rng) : rng.chance(0.7) ? rng.pick(LEAD_SOURCES) : null,
      contact_preference: rng.chance(0.5) ? rng.pick(CONTACT_PREFERENCES) : null,
      lead_type: leadType,
      notes: rng.chance(0.1) ? rng.pick(NOTES) : null,
      estimated_budget: rng.chance(0.3)
        ? rng.pick([500, 750, 1000, 1500, 2500, 5000, 1249.99])
        : null,
      estimated_number_guests: rng.chance(0.4) ? rng.int(2, 40) * 10 : null,
      indoor_outdoor: rng.chance(0.3) ? rng.pick(INDOOR_OUTDOOR) : null,
      subject: rng.chance(0.2) ? rng.pick(SUBJECTS) : null,
      message: rng.chance(0.5) ? rng.pick(MESSAGES) : null,
      // Every field the blocks below may set, present from the start (null reads as absent):
      // inputs of one shape keep newLeadAttrs' property reads monomorphic.
      ...OPTIONAL_INPUT,
    };
    const place = skewed ? skewed.city(rng) : rng.chance(0.6) ? rng.pick(CITIES) : null;
    if (place) {
      const [city, state, zip] = place;
      const full = rng.chance(0.7);
      input.venue_name = full ? rng.pick(VENUES) : null;
      input.venue_address = full ? `${rng.int(1, 9999)} ${rng.pick(STREETS)}` : null;
      input.venue_city = city;
      input.venue_state = state;
      input.venue_zip = full ? zip : null;
    }
    if (rng.chance(0.25)) {
      input.utm_source = rng.pick(UTM_SOURCES);
      input.utm_medium = rng.pick(UTM_MEDIUMS);
      input.utm_campaign = rng.pick(UTM_CAMPAIGNS);
      if (rng.chance(0.5)) input.utm_term = rng.pick(UTM_TERMS);
      if (rng.chance(0.3)) input.utm_content = rng.pick(UTM_CONTENTS);
      if (rng.chance(0.3)) input.ad_click_id = `Cj0KCQ${rng.hex(20)}`;
    }
    if (origin === 'Contact Form') input.contact_form_id = rng.int(1, 3);
    if (rng.chance(0.1)) {
      input.next_follow_up_on = ymdOf(addDays(dateOfMs(createdMs), rng.int(1, 14)));
    }
    const staff = catalog.staff.length > 0 && rng.chance(0.1) ? rng.pick(catalog.staff) : undefined;
    if (staff) input.staff_id = staff.id;
    if (catalog.staff.length > 0 && rng.chance(0.03)) {
      input.referred_by_user_id = rng.pick(catalog.staff).id;
    }

    // What createLead turns into the primary booking: date, time, length, package, service.
    let plan: BookingPlan | undefined;
    if (rng.chance(0.65)) {
      const pkg = rng.chance(0.82) ? rng.pick(catalog.packages) : undefined;
      const serviceId = pkg === undefined && rng.chance(0.2) ? rng.pick(serviceIds) : null;
      const dated = rng.chance(0.9);
      plan = {
        pkg,
        serviceId,
        date: dated ? addDays(dateOfMs(createdMs), rng.int(3, 420)) : null,
        minutes: dated && rng.chance(0.75) ? rng.int(20, 40) * 30 : null,
        length: rng.chance(0.25) ? rng.pick(LENGTHS) : null,
        staff,
      };
      if (pkg === undefined && serviceId === null && plan.date === null) plan.length ??= 180;
      if (plan.date) input.event_date = ymdOf(plan.date);
      if (plan.minutes !== null) input.event_time = clock12(plan.minutes);
      if (plan.length !== null) input.length_in_minutes = plan.length;
      if (pkg) input.package_id = pkg.id;
      if (serviceId !== null) input.service_id = serviceId;
    }

    const spam = rng.chance(0.03);
    const contacted = spam ? 0 : rng.weighted(TIMES_CONTACTED);
    const options: CreateLeadOptions = {
      origin,
      spam,
      archived: !spam && rng.chance(0.04),
      times_contacted: contacted,
      last_contact_at:
        contacted > 0
          ? zonedIso(Math.min(SEED_EPOCH, createdMs + rng.int(1, 30 * 24) * 3_600_000), timeZone)
          : null,
      lead_event_type: leadType !== null && rng.chance(0.2) ? leadType : null,
    };
    const attrs = newLeadAttrs(
      id,
      input,
      { token: rng.hex(24), createdAt: zonedIso(createdMs, timeZone), brandId },
      options,
    );
    batchRows.add('lead', id, null, attrs);
    addLeadSideRows(batchRows.side, id, attrs);
    records += 1;

    if (plan) {
      const primary = writeBooking(id, createdMs, plan);
      if (plan.pkg && primary.startMs !== null && !spam) {
        convertible.push({
          id,
          createdMs,
          startMs: primary.startMs,
          named: Boolean(who.first || who.last),
        });
      }
      if (plan.pkg && plan.date && rng.chance(0.05)) {
        writeBooking(id, createdMs, {
          ...plan,
          pkg: rng.pick(catalog.packages),
          date: addDays(plan.date, 1),
          length: null,
        });
      }
    }
    if ((n + 1) % batch === 0 || n + 1 === count) {
      flush(batchRows, { records, leads: n + 1 });
      batchRows = new Batch();
    }
  }
  return { leads: count, bookings, records, convertible, lastIds: ids };
}

/**
 * generateLeads on a worker thread, with `flush` still called here, in order: a big run's
 * JavaScript (building and stringifying 100k leads) overlaps this thread's SQLite inserts.
 * Synchronous like generateLeads, so callers keep their transaction: this thread sleeps on
 * a shared counter the worker bumps after each message, and takes messages off the port
 * without the event loop.
 */
export function generateLeadsOnWorker(
  job: LeadJob,
  flush: (rows: LeadRows, done: { records: number; leads: number }) => void,
): LeadRun {
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const script = workerScript();
  const worker = new Worker(script.file, {
    workerData: {
      entry: script.entry,
      job,
      port: port2,
      signal,
    },
    transferList: [port2],
    // Room for a batch's short-lived objects: fewer scavenges (~0.3 s less per 100k leads).
    resourceLimits: { maxYoungGenerationSizeMb: 96 },
    // Not the parent's flags: under `node --input-type=module -e …` the worker inherited them
    // and never ran its script. ts-worker.mjs registers tsx itself.
    execArgv: [],
  });
  // Failures during the run come through the port; an 'error' event can only fire once this
  // thread is back in its event loop, after the run, and must not take the sandbox down.
  worker.on('error', () => undefined);
  try {
    let deadline = Date.now() + WORKER_SILENCE_MS;
    for (;;) {
      const seen = Atomics.load(signal, 0);
      const received = receiveMessageOnPort(port1);
      if (received === undefined) {
        if (Date.now() > deadline) {
          throw new SeedWorkerError(`no word from it for ${WORKER_SILENCE_MS / 1000} s`);
        }
        Atomics.wait(signal, 0, seen, 1000);
        continue;
      }
      deadline = Date.now() + WORKER_SILENCE_MS;
      const message = received.message as WorkerMessage;
      if ('error' in message) throw new SeedWorkerError(message.error);
      if ('run' in message) return message.run;
      flush(message.rows, message.done);
    }
  } finally {
    port1.close();
    void worker.terminate();
  }
}

/**
 * The worker's script: compiled next to this module (`npm run build`), or the TypeScript
 * source through ts-worker.mjs. Checked here because a worker whose file is missing fails
 * only in its event loop, which this thread does not run while it waits.
 */
function workerScript(): { file: URL; entry?: string } {
  const exists = (url: URL) => existsSync(fileURLToPath(url));
  const compiled = new URL('./seed-leads-worker.js', import.meta.url);
  if (exists(compiled)) return { file: compiled };
  const launcher = new URL('./ts-worker.mjs', import.meta.url);
  const source = new URL('./seed-leads-worker.ts', import.meta.url);
  if (exists(launcher) && exists(source)) return { file: launcher, entry: source.href };
  throw new SeedWorkerError(
    `its script is missing: no ${fileURLToPath(compiled)} or ${fileURLToPath(source)}`,
  );
}

/** How long the worker may stay silent (it reports every batch) before the run fails. */
const WORKER_SILENCE_MS = 60_000;

/** What seed-leads-worker.ts (and ts-worker.mjs, on a failed start) send. */
export type WorkerMessage =
  | { rows: LeadRows; done: { records: number; leads: number } }
  | { run: LeadRun }
  | { error: string };

/** The lead generator's worker failed: a bug, not bad input, so not worth retrying. */
export class SeedWorkerError extends Error {
  readonly retryable = false;
  constructor(detail: string) {
    super(`generating leads on a worker thread failed: ${detail}`);
    this.name = 'SeedWorkerError';
  }
}
