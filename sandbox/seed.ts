import { Clock } from './clock.js';
import type { SandboxContext } from './context.js';
import type { Db, StoredRecord } from './db.js';
import { Identity } from './identity.js';
import { PERMISSIONS } from './permissions.js';
import { businessTimeZone, zonedIso, type DateParts } from './time.js';
import { createAddOn, createAddOnCategory, type AddOnAttrs } from './resources/add-ons.js';
import {
  cancelAppointment,
  createAppointment,
  createAppointmentCalendar,
  deleteAppointment,
  type AppointmentInput,
} from './resources/appointments.js';
import { createEventNote } from './resources/event-notes.js';
import { createEvent, updateEvent, type EventAttrs, type EventPatch } from './resources/events.js';
import { createExpense, type ExpenseInput } from './resources/expenses.js';
import {
  bulkLeadIndexing,
  type LeadAddOnAttrs,
  type LeadBookingAttrs,
  type LeadIndexWriter,
} from './resources/lead-bookings.js';
import {
  AUTOMATION_PLATFORM_SOURCE,
  CONTACT_PREFERENCES,
  defaultBrand,
  INDOOR_OUTDOOR,
  LEAD_SOURCES,
  newLeadAttrs,
  type CreateLeadOptions,
  type LeadInput,
} from './resources/leads.js';
import type { PackageAttrs } from './resources/offerings.js';
import {
  attachQuestionnaire,
  ensurePlanningDefaults,
  type TemplateAttrs,
} from './resources/questionnaires.js';

/**
 * Generated data for a new sandbox database: leads (with bookings), events, appointments,
 * expenses, notes and questionnaires with the variety a real business accumulates.
 *
 * Deterministic for a seed: every choice comes from a seeded PRNG (one stream per section, so
 * growing one count leaves the other sections' choices alone), and every timestamp is derived
 * from SEED_EPOCH instead of the wall clock — creators run against a frozen clock.
 *
 * Leads and lead bookings, the bulk of a big run, bypass the per-record creators (which pay
 * for a time-zone lookup, Intl formatting and a sequence round trip per record): their
 * attributes come from the leads module's pure builder (newLeadAttrs) and a booking builder
 * that mirrors addLeadBooking's, ids are taken from the sequences in one block, and the rows
 * go in through one prepared statement inside one transaction, with the secondary indexes
 * rebuilt afterwards. The leads module's list and search tables are written alongside from
 * the same attributes (its bulk path, with its triggers off). Everything else is made by the
 * resource modules' creators.
 */

export interface SeedOptions {
  /** Leads to generate (default 0). */
  leads?: number;
  /** Events to generate (default: one per 25 leads, at most 500). */
  events?: number;
  /** Same seed, same data (default 1). */
  seed?: string | number;
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
  appointments: number;
  expenses: number;
  eventNotes: number;
  questionnaires: number;
  /** Rows added to the record store, everything included. */
  records: number;
  ms: number;
}

/** Generated times are laid out around this instant (2026-07-01T00:00:00Z), never around now. */
export const SEED_EPOCH = Date.UTC(2026, 6, 1);
export const DEFAULT_SEED = '1';
const PROGRESS_EVERY = 25_000;
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const MAX_DEFAULT_EVENTS = 500;
const DEFAULT_PREVIEW_IMAGE = '/images/packages/default.jpg';

/** The number of events generated when only a lead count is given. */
export function defaultEventCount(leads: number): number {
  return Math.min(MAX_DEFAULT_EVENTS, Math.ceil(leads / 25));
}

// ---------------------------------------------------------------------------------------------
// Randomness

/** mulberry32 over an FNV-1a hash of the seed text: tiny, fast and the same everywhere. */
export class Rng {
  private state: number;

  constructor(seed: string) {
    let h = 0x811c9dc5;
    for (let i = 0; i < seed.length; i += 1) {
      h ^= seed.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    this.state = h >>> 0;
  }

  /** [0, 1) */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(list: readonly T[]): T {
    const value = list[Math.floor(this.next() * list.length)];
    if (value === undefined) throw new Error('pick from an empty list');
    return value;
  }

  weighted<T>(entries: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of entries) total += w;
    let r = this.next() * total;
    for (const [value, w] of entries) {
      r -= w;
      if (r < 0) return value;
    }
    const last = entries[entries.length - 1];
    if (!last) throw new Error('weighted pick from an empty list');
    return last[0];
  }

  hex(length: number): string {
    let out = '';
    while (out.length < length) {
      out += Math.floor(this.next() * 0x1_0000_0000)
        .toString(16)
        .padStart(8, '0');
    }
    return out.slice(0, length);
  }

  uuid(): string {
    const h = this.hex(32);
    const variant = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }

  /** `count` distinct indexes below `n` (fewer when n is smaller). */
  sample(n: number, count: number): Set<number> {
    const out = new Set<number>();
    const want = Math.min(n, count);
    while (out.size < want) out.add(Math.floor(this.next() * n));
    return out;
  }
}

/** Share of n, at least `min` once n reaches `minFrom` (so small runs still show the case). */
function shareOf(n: number, share: number, min = 1, minFrom = 3): number {
  const count = Math.round(n * share);
  return n >= minFrom ? Math.max(min, count) : count;
}

// ---------------------------------------------------------------------------------------------
// Time

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * Zoned timestamps without an Intl call per record (Intl formatting costs tens of µs): the
 * zone's offset is looked up once per week, and in the few weeks where it changes, the
 * change is located to the second by bisection. Results equal time.ts's zonedIso/fromZoned.
 */
export class ZonedTimes {
  /** Per week: its offset in minutes, or the instant it changes and the offsets around it. */
  private readonly weeks = new Map<
    number,
    number | { at: number; before: number; after: number }
  >();

  constructor(readonly timeZone: string) {}

  private exactOffset(ms: number): number {
    const text = zonedIso(ms, this.timeZone);
    const sign = text.at(-6) === '-' ? -1 : 1;
    return sign * (Number(text.slice(-5, -3)) * 60 + Number(text.slice(-2)));
  }

  /** The zone's UTC offset at that instant, in minutes. */
  offset(ms: number): number {
    const week = Math.floor(ms / WEEK);
    let entry = this.weeks.get(week);
    if (entry === undefined) {
      let lo = week * WEEK;
      let hi = lo + WEEK;
      const before = this.exactOffset(lo);
      const after = this.exactOffset(hi - 1000);
      if (before === after) entry = before;
      else {
        // Zones change offset at most once a week: find the first second of the new one.
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (this.exactOffset(mid) === before) lo = mid;
          else hi = mid;
        }
        entry = { at: hi, before, after };
      }
      this.weeks.set(week, entry);
    }
    if (typeof entry === 'number') return entry;
    return Math.floor(ms / 1000) * 1000 < entry.at ? entry.before : entry.after;
  }

  /** Exactly zonedIso(ms, timeZone). */
  iso(ms: number): string {
    const offset = this.offset(ms);
    const d = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000);
    const sign = offset < 0 ? '-' : '+';
    const abs = Math.abs(offset);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  }

  /** Exactly fromZoned(date, minutes, timeZone): the same two-step guess, with cached offsets. */
  instant(date: DateParts, minutes: number): number {
    const guess = Date.UTC(date.year, date.month - 1, date.day, 0, minutes);
    const first = guess - this.offset(guess) * 60_000;
    return guess - this.offset(first) * 60_000;
  }
}

/** The calendar date `days` after SEED_EPOCH's (a wall-clock date, zone-free). */
function epochDate(days: number): DateParts {
  const d = new Date(SEED_EPOCH + Math.round(days) * DAY);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

function dateOfMs(ms: number): DateParts {
  const d = new Date(ms);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

function addDays(date: DateParts, days: number): DateParts {
  return dateOfMs(Date.UTC(date.year, date.month - 1, date.day + days));
}

const ymdText = (d: DateParts): string => `${d.year}-${pad(d.month)}-${pad(d.day)}`;
const mdyText = (d: DateParts): string => `${pad(d.month)}-${pad(d.day)}-${d.year}`;

function time12Text(minutes: number): string {
  const hour = Math.floor(minutes / 60);
  return `${hour % 12 === 0 ? 12 : hour % 12}:${pad(minutes % 60)} ${hour < 12 ? 'AM' : 'PM'}`;
}

/** The creators read "now" from ctx.clock; seeding moves this one by hand. */
class FrozenClock extends Clock {
  at = SEED_EPOCH;
  override now(): number {
    return this.at;
  }
}

// ---------------------------------------------------------------------------------------------
// Pools

const FIRST_NAMES = [
  'José',
  'Zoë',
  'Anaïs',
  'Søren',
  'Björn',
  'Chloé',
  'Renée',
  'Élodie',
  'François',
  'Jürgen',
  'Łukasz',
  'Małgorzata',
  'Siobhán',
  'Seán',
  'Niamh',
  'Aoife',
  'Íñigo',
  'Mía',
  'Ørjan',
  'Åsa',
  'Mateo',
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Ava',
  'Sophia',
  'Jackson',
  'Aaliyah',
  'Priya',
  'Aarav',
  'Wei',
  'Mei',
  'Hiroshi',
  'Yuki',
  'Min-jun',
  'Ji-woo',
  'Oluwaseun',
  'Chiamaka',
  'Kwame',
  'Fatima',
  'Omar',
  'Layla',
  'Thảo',
  'Dmitri',
  'Анна',
  'Ольга',
  'Mary-Kate',
  'Jean-Luc',
  "D'Andre",
  "Ke'Shawn",
  'Inès',
  'Nikolaj',
  'Magnús',
  'Þóra',
  'Grace',
  'Ethan',
  'Isabella',
  'Lucas',
  'Amelia',
  'Benjamin',
  'Harper',
  'Elijah',
  'Evelyn',
  'James',
  'Camila',
] as const;

const LAST_NAMES = [
  'Núñez',
  'Ålvik',
  'Ødegaard',
  "O'Brien",
  "O'Connor",
  'García-Márquez',
  'Smith-Jones',
  'Müller',
  'Schröder',
  'Łęcki',
  'Dvořák',
  'Nguyễn',
  'Trần',
  'Kowalski',
  'Johnson',
  'Williams',
  'Brown',
  'Garcia',
  'Martínez',
  'Hernández',
  'Lefèvre',
  'Dubois',
  'Björklund',
  'Kim',
  'Park',
  'Tanaka',
  'Yamamoto',
  'Okafor',
  'Adeyemi',
  'Mensah',
  'Patel',
  'Singh',
  'Chen',
  'Wang',
  'van der Berg',
  'de la Cruz',
  'MacDonald',
  'McKenzie',
  'St. James',
  'Abu-Bakr',
  'Haddad',
  'Cohen',
  'Rossi',
  'Bianchi',
  'Fernández',
  'Иванова',
  'Papadopoulos',
  'Øberg',
  "D'Angelo",
  'Çelik',
  'Şahin',
  'Jónsdóttir',
  'Lindqvist',
  'Taylor',
  'Anderson',
  'Thomas',
  'Moore',
  'Jackson',
  'White',
  'Harris',
  'Clark',
  'Lewis',
  'Robinson',
  'Walker',
] as const;

/** Names people type whole into the first-name box. */
const WHOLE_NAMES = [
  '李雷',
  '韩梅梅',
  '王芳',
  '김민준',
  '佐藤 花子',
  'محمد علي',
  'Ngọc Ánh',
] as const;

const COMPANIES = [
  'Acme Corp',
  'Globex',
  'Initech',
  'Umbrella Events',
  'Société Générale Events',
  'Müller & Söhne GmbH',
  'Ōtsuka Trading',
  'Blåbær AS',
  'Wayne Enterprises',
  "Bob's Burgers",
  'Zürich Re Social Club',
  'Señor Frog’s Catering',
  'Hooli',
  'Pied Piper',
] as const;

const LEAD_TYPES = [
  'Wedding',
  'Corporate Event',
  'Birthday Party',
  'School Event',
  'Holiday Party',
  'Bar/Bat Mitzvah',
  'Quinceañera',
  'Graduation',
  'Fundraiser',
  'Baby Shower',
] as const;

const VENUES = [
  'The Grand Ballroom',
  'Rosewood Barn',
  'Château Lumière',
  'Café Olé',
  'Hotel Nøbel',
  'The Loft at 5th',
  "St. Mary's Hall",
  'Riverside Pavilion',
  'Zürich House',
  'La Peña Cultural Center',
  'Åkerö Manor',
  'The Foundry',
  'Old Mill Estate',
] as const;

const STREETS = [
  'Main St',
  'Oak Ave',
  'Elm Street',
  'Calle Ocho',
  'Rue Royale',
  'Peachtree Rd NE',
  'Broadway',
  'Market St',
  'Lakeshore Dr',
  'Avenida de las Américas',
] as const;

const CITIES: readonly (readonly [string, string, string])[] = [
  ['Austin', 'TX', '78701'],
  ['Brooklyn', 'NY', '11201'],
  ['Chicago', 'IL', '60601'],
  ['San José', 'CA', '95113'],
  ['Miami', 'FL', '33101'],
  ['Seattle', 'WA', '98101'],
  ['Denver', 'CO', '80202'],
  ['New Orleans', 'LA', '70112'],
  ['Boston', 'MA', '02108'],
  ['Santa Fe', 'NM', '87501'],
  ["Coeur d'Alene", 'ID', '83814'],
  ['Nashville', 'TN', '37203'],
];

const EMAIL_DOMAINS = [
  'example.com',
  'example.org',
  'example.net',
  'mail.example',
  'inbox.example',
  'corp.example',
] as const;
const AREA_CODES = [212, 312, 415, 512, 617, 646, 702, 718, 305, 206] as const;

const SUBJECTS = [
  'Photo booth for our wedding',
  'Availability?',
  'Quote request',
  'Corporate holiday party',
  '¿Tienen disponibilidad en junio?',
  'Sweet 16 🎉',
  'Booth + DJ package',
  'Pricing',
] as const;

const MESSAGES = [
  'Hi! We are getting married next summer and would love a booth. What packages do you have?',
  'Could you send a quote for about 150 guests? Thanks 🙏',
  'Hola, ¿tienen disponibilidad para una quinceañera? Gracias.',
  'Is the Glam Booth available? We need it from 7 to 11 PM.\nAlso: do you travel out of town?',
  "We're planning a company party — 200 people, open bar, need a DJ and a booth.",
  'Bonjour ! Nous cherchons un photobooth pour notre mariage. Merci 😊',
  'Looking for something fun for my daughter’s graduation party.',
  'Second time booking with you — loved it last year!',
] as const;

const NOTES = [
  'Called twice, left voicemail.',
  'Prefers text. Budget is flexible.',
  'Referred by the venue coordinator.',
  'Wants the gold sequin backdrop — check availability.',
  'Asked about a discount for a weekday date.',
  'Spoke in Spanish; follow up en español.',
] as const;

const UTM_SOURCES = ['google', 'facebook', 'instagram', 'newsletter', 'theknot', 'tiktok'] as const;
const UTM_MEDIUMS = ['cpc', 'social', 'email', 'referral', 'display'] as const;
const UTM_CAMPAIGNS = [
  'spring_weddings',
  'holiday_parties_2025',
  'brand_search',
  'retargeting',
  'quince_es',
] as const;
const UTM_TERMS = ['photo booth rental', 'wedding dj', 'cabine photo', '360 booth'] as const;
const UTM_CONTENTS = ['hero_video', 'carousel_2', 'text_ad_b'] as const;

const ORIGINS: readonly (readonly [string, number])[] = [
  ['Lead Form', 35],
  ['Contact Form', 15],
  ['Event Booking Form', 10],
  ['Online Booking', 10],
  ['API', 10],
  ['App', 12],
  [AUTOMATION_PLATFORM_SOURCE, 8],
];

const STAFF = [
  { name: 'Søren Ødegaard', email: 'soren@sandbox.example' },
  { name: 'Anaïs Dubois', email: 'anais@sandbox.example' },
  { name: 'Marcus Lee', email: 'marcus@sandbox.example' },
] as const;

const ADD_ONS = [
  { name: 'Guest Book', description: 'A scrapbook of every strip, signed by guests.', price: 99 },
  { name: 'Custom Props', description: 'Props themed to your event.', price: 49.5 },
  {
    name: 'Extra Attendant',
    description: 'A second attendant, by the hour.',
    price_method: 'hourly',
    hourly_price: 45,
  },
  { name: 'Glitter Backdrop', description: 'Sparkly backdrop upgrade.', price: 150 },
] as const;

const LOCATIONS = [
  'Zoom: https://zoom.example/j/8675309',
  'Our studio — 12 Rue Royale',
  'Phone call',
  'Café Olé, Austin',
] as const;
const PAYEES = ['Costco', 'Amazon', 'Shell', 'PrintShop Zürich', 'Señor Props', 'U-Haul'] as const;
const PAYMENT_METHODS = ['Credit Card', 'Cash', 'Check', 'Bank Transfer', 'Venmo'] as const;
const EXPENSE_DESCRIPTIONS = [
  'Printer paper and ink',
  'Gas for the van',
  'Props restock',
  'Backdrop repair',
  'Parking at venue',
] as const;
const EVENT_NOTES = [
  'Customer confirmed the load-in time with the venue.',
  'Bring the extension cords — outlets are far from the stage.',
  'Nota: el cliente prefiere WhatsApp.',
  'Paid the deposit by check; waiting for it to clear.',
  'Venue requires a certificate of insurance 🧾',
] as const;

// ---------------------------------------------------------------------------------------------
// People

interface Person {
  first: string | null;
  last: string | null;
}

function person(rng: Rng): Person {
  if (rng.chance(0.02)) return { first: null, last: null };
  if (rng.chance(0.04)) return { first: rng.pick(WHOLE_NAMES), last: null };
  return { first: rng.pick(FIRST_NAMES), last: rng.chance(0.05) ? null : rng.pick(LAST_NAMES) };
}

const fullName = (p: Person): string => [p.first, p.last].filter(Boolean).join(' ');

const FOLD: Record<string, string> = { ø: 'o', æ: 'ae', ß: 'ss', ł: 'l', đ: 'd', þ: 'th', ı: 'i' };

const asciiCache = new Map<string, string>();

/** 'Ødegaard' → 'odegaard'; scripts without a Latin spelling give ''. */
function ascii(text: string): string {
  let out = asciiCache.get(text);
  if (out === undefined) {
    out = text
      .toLowerCase()
      .replace(/[øæßłđþı]/g, (c) => FOLD[c] ?? '')
      .normalize('NFD')
      .replace(/[^a-z0-9]/g, '');
    asciiCache.set(text, out);
  }
  return out;
}

const LENGTHS = [120, 180, 240, 300] as const;
const TIMES_CONTACTED = [
  [0, 5],
  [1, 2],
  [2, 2],
  [3, 1],
  [6, 1],
] as const;

const EMAIL_STYLES = [
  ['dot', 5],
  ['initial', 2],
  ['underscore', 1],
] as const;

function emailFor(rng: Rng, p: Person, n: number): string {
  const first = p.first ? ascii(p.first) : '';
  const last = p.last ? ascii(p.last) : '';
  const style = rng.weighted(EMAIL_STYLES);
  let base = first || last || 'guest';
  if (first && last) {
    if (style === 'dot') base = `${first}.${last}`;
    else if (style === 'initial') base = `${first.charAt(0)}${last}`;
    else base = `${first}_${last}`;
  }
  return `${base}${n}@${rng.pick(EMAIL_DOMAINS)}`;
}

const PHONE_STYLES = [
  ['paren', 4],
  ['dash', 3],
  ['dot', 1],
  ['e164', 1],
  ['uk', 1],
  ['de', 1],
] as const;

function phone(rng: Rng): string {
  const style = rng.weighted(PHONE_STYLES);
  if (style === 'uk') return `+44 20 7946 0${pad(rng.int(0, 999), 3)}`;
  if (style === 'de') return `+49 30 ${rng.int(1_000_000, 9_999_999)}`;
  const area = rng.pick(AREA_CODES);
  const line = pad(rng.int(100, 199), 4);
  if (style === 'paren') return `(${area}) 555-${line}`;
  if (style === 'dash') return `${area}-555-${line}`;
  if (style === 'dot') return `${area}.555.${line}`;
  return `+1 ${area} 555 ${line}`;
}

// ---------------------------------------------------------------------------------------------
// Bulk leads

interface Catalog {
  packages: StoredRecord<PackageAttrs>[];
  serviceNames: Map<number, string>;
  groupNames: Map<number, string>;
  addOns: StoredRecord<AddOnAttrs>[];
  staff: { id: number; name: string }[];
}

/** Ids taken from a sequence in one block; the sequence is moved once, at the end. */
class IdBlock {
  private last: number;
  constructor(
    private readonly ctx: SandboxContext,
    private readonly name: string,
  ) {
    const row = ctx.db.prepare('SELECT value FROM sequences WHERE name = ?').get(name) as
      { value: number } | undefined;
    this.last = row?.value ?? 0;
  }
  next(): number {
    this.last += 1;
    return this.last;
  }
  commit(): void {
    this.ctx.db
      .prepare(
        `INSERT INTO sequences (name, value) VALUES (?, ?)
         ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)`,
      )
      .run(this.name, this.last);
  }
}

/**
 * Runs a bulk insert into `records` with its secondary indexes dropped, then rebuilds them
 * from their own stored definitions: one sorted build per index instead of a b-tree update
 * (and, for the expression indexes, a JSON parse) per row. Inside the caller's transaction,
 * so nobody sees the table without them.
 */
function withIndexesRebuilt(db: Db, bulk: () => void): void {
  const indexes = db
    .prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL",
    )
    .all() as { name: string; sql: string }[];
  for (const index of indexes) db.exec(`DROP INDEX "${index.name.replace(/"/g, '""')}"`);
  try {
    bulk();
  } finally {
    for (const index of indexes) db.exec(index.sql);
  }
}

/** A converted-to-be lead: one with a dated package booking, not spam. */
interface ConvertibleLead {
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

function seedLeads(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  times: ZonedTimes,
  catalog: Catalog,
  progress: (records: number, leads: number) => void,
): { leads: number; bookings: number; records: number; convertible: ConvertibleLead[] } {
  const rng = new Rng(`${seed}:leads`);
  const brandId = defaultBrand(ctx, businessId).id;
  const insert = ctx.db.prepare(
    'INSERT INTO records (type, id, business_id, parent_id, attrs) VALUES (?, ?, ?, ?, ?)',
  );
  const leadIds = new IdBlock(ctx, 'lead');
  const bookingIds = new IdBlock(ctx, 'lead_booking');
  const addOnIds = new IdBlock(ctx, 'lead_add_on');
  const convertible: ConvertibleLead[] = [];
  const serviceIds = [...catalog.serviceNames.keys()];
  const recentEmails: string[] = [];
  let records = 0;
  let bookings = 0;
  const span = 730 * DAY;
  const firstMs = SEED_EPOCH - span;

  const writeBooking = (
    index: LeadIndexWriter,
    leadId: number,
    createdMs: number,
    plan: BookingPlan,
  ): { id: number; startMs: number | null } => {
    const id = bookingIds.next();
    const pkg = plan.pkg?.attrs;
    const startMs = plan.date === null ? null : times.instant(plan.date, plan.minutes ?? 0);
    const length = plan.length ?? pkg?.default_length_in_minutes ?? null;
    const serviceId = pkg?.service_id ?? plan.serviceId;
    // The shape addLeadBooking writes for a lead created with these fields.
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
      starts_at_date: plan.date === null ? null : ymdText(plan.date),
      starts_at_minutes: plan.minutes,
      starts_at: startMs === null ? null : times.iso(startMs),
      ends_at: startMs === null || length === null ? null : times.iso(startMs + length * 60_000),
      length_in_minutes: length,
      length_in_days: null,
      units: null,
      package_unit_range_id: null,
      staff_id: plan.staff?.id ?? null,
      staff_name: plan.staff?.name ?? null,
      photobooth_background_id: null,
      preview_image: pkg?.preview_image ?? DEFAULT_PREVIEW_IMAGE,
      created_at: new Date(createdMs).toISOString(),
    };
    insert.run('lead_booking', id, businessId, leadId, JSON.stringify(attrs));
    index.booking(id, businessId, attrs);
    records += 1;
    bookings += 1;
    if (pkg && catalog.addOns.length > 0 && rng.chance(0.08)) {
      const addOn = rng.pick(catalog.addOns);
      const addOnId = addOnIds.next();
      const line: LeadAddOnAttrs = {
        id: addOnId,
        lead_booking_id: id,
        add_on_id: addOn.id,
        name: addOn.attrs.name,
        quantity: rng.chance(0.8) ? 1 : rng.int(2, 4),
        price_cents: addOn.attrs.price_cents,
      };
      insert.run('lead_add_on', addOnId, businessId, id, JSON.stringify(line));
      records += 1;
    }
    return { id, startMs };
  };

  const loop = (index: LeadIndexWriter) => {
    for (let n = 0; n < count; n += 1) {
      const id = leadIds.next();
      // Leads arrive steadily over the two years before the epoch, with some jitter.
      const jitter = rng.int(-6 * 3600, 6 * 3600) * 1000;
      const createdMs = Math.min(
        SEED_EPOCH - 1000,
        Math.max(firstMs, firstMs + Math.floor((span * n) / count) + jitter),
      );
      const who = person(rng);
      const repeat = recentEmails.length > 0 && rng.chance(0.02);
      const email = repeat ? rng.pick(recentEmails) : emailFor(rng, who, id);
      if (!repeat) {
        if (recentEmails.length >= 50) recentEmails[n % 50] = email;
        else recentEmails.push(email);
      }
      const leadType = rng.chance(0.85) ? rng.pick(LEAD_TYPES) : null;
      const origin = rng.weighted(ORIGINS);
      const input: LeadInput = {
        email: rng.chance(0.03) ? email.toUpperCase() : email,
        first_name: who.first,
        last_name: who.last,
        company_name: rng.chance(leadType === 'Corporate Event' ? 0.7 : 0.06)
          ? rng.pick(COMPANIES)
          : null,
        phone: rng.chance(0.7) ? phone(rng) : null,
        lead_source: rng.chance(0.7) ? rng.pick(LEAD_SOURCES) : null,
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
      };
      if (rng.chance(0.6)) {
        const [city, state, zip] = rng.pick(CITIES);
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
        input.next_follow_up_on = ymdText(addDays(dateOfMs(createdMs), rng.int(1, 14)));
      }
      const staff =
        catalog.staff.length > 0 && rng.chance(0.1) ? rng.pick(catalog.staff) : undefined;
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
        if (plan.date) input.event_date = ymdText(plan.date);
        if (plan.minutes !== null) input.event_time = time12Text(plan.minutes);
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
            ? times.iso(Math.min(SEED_EPOCH, createdMs + rng.int(1, 30 * 24) * 3_600_000))
            : null,
        lead_event_type: leadType !== null && rng.chance(0.2) ? leadType : null,
      };
      const attrs = newLeadAttrs(
        id,
        input,
        { token: rng.hex(24), createdAt: times.iso(createdMs), brandId },
        options,
      );
      insert.run('lead', id, businessId, null, JSON.stringify(attrs));
      index.lead(id, businessId, attrs);
      records += 1;

      if (plan) {
        const primary = writeBooking(index, id, createdMs, plan);
        if (plan.pkg && primary.startMs !== null && !spam) {
          convertible.push({
            id,
            createdMs,
            startMs: primary.startMs,
            named: Boolean(who.first || who.last),
          });
        }
        if (plan.pkg && plan.date && rng.chance(0.05)) {
          writeBooking(index, id, createdMs, {
            ...plan,
            pkg: rng.pick(catalog.packages),
            date: addDays(plan.date, 1),
            length: null,
          });
        }
      }
      progress(records, n + 1);
    }
  };
  // The list and search tables are filled from the attributes in hand, which is much
  // cheaper than their triggers (or a copy) re-reading each row's JSON.
  withIndexesRebuilt(ctx.db, () => bulkLeadIndexing(ctx.db, loop));
  leadIds.commit();
  bookingIds.commit();
  addOnIds.commit();
  return { leads: count, bookings, records, convertible };
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

interface EventsResult {
  events: StoredRecord<EventAttrs>[];
  startMs: Map<number, number>;
}

function seedEvents(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  convertible: ConvertibleLead[],
): EventsResult {
  const rng = new Rng(`${seed}:events`);
  const out: StoredRecord<EventAttrs>[] = [];
  const startMs = new Map<number, number>();
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
          starts_at_date: mdyText(b === 0 ? date : addDays(date, rng.int(0, 1))),
          starts_at_time: time12Text(b === 0 ? minutes : Math.min(minutes + 240, 1380)),
        };
        if (pkg.attrs.custom && rng.chance(0.7)) entry.one_off_custom_title = 'Custom 360° Booth';
        if (pkg.attrs.price_method !== 'daily') {
          if (rng.chance(0.1)) {
            entry.ends_at_time = time12Text(Math.min(minutes + rng.int(4, 10) * 30, 1410));
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
      body.proposal_valid_through = ymdText(dateOfMs(createdMs + rng.int(14, 60) * DAY));
    }

    clock.at = createdMs;
    let event = createEvent(ctx, businessId, body, {
      createdAt: new Date(createdMs).toISOString(),
    });
    // createEvent draws its token from the OS; a seeded one keeps URLs stable.
    event = ctx.records.update(event, { token: rng.hex(24) });
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
    startMs.set(event.id, eventStart);
  }
  return { events: out, startMs };
}

function seedAppointments(
  ctx: SandboxContext,
  businessId: number,
  count: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  ownerId: number,
  times: ZonedTimes,
): number {
  if (count === 0) return 0;
  const rng = new Rng(`${seed}:appointments`);
  const hosts = [ownerId, ...catalog.staff.map((s) => s.id)];
  clock.at = SEED_EPOCH - 800 * DAY;
  const calendar = createAppointmentCalendar(ctx, businessId, { user_id: ownerId });
  const canceled = rng.sample(count, shareOf(count, 0.1));
  const deleted = rng.sample(count, shareOf(count, 0.04));
  for (let k = 0; k < count; k += 1) {
    const who = person(rng);
    const date = epochDate(rng.int(-365, 365));
    const startsAtMs = times.instant(date, rng.int(18, 33) * 30);
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
      event_date: rng.chance(0.4) ? ymdText(addDays(date, rng.int(30, 300))) : null,
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
    }
  }
  return count;
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
      payment_date: ymdText(date),
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
  return count;
}

function seedNotesAndQuestionnaires(
  ctx: SandboxContext,
  businessId: number,
  seed: string,
  clock: FrozenClock,
  catalog: Catalog,
  ownerId: number,
  events: EventsResult,
): { notes: number; questionnaires: number } {
  const list = events.events;
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
  const times = new ZonedTimes(businessTimeZone(ctx.db, businessId));
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
      };
    }
    const catalog = seedCatalogExtras(seedCtx, businessId, clock);
    const leads = seedLeads(seedCtx, businessId, leadCount, seed, times, catalog, report);
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
    const appointments = seedAppointments(
      seedCtx,
      businessId,
      appointmentCount,
      seed,
      clock,
      catalog,
      ownerUserId,
      times,
    );
    const expenses = seedExpenses(
      seedCtx,
      businessId,
      Math.min(5000, Math.max(4, Math.ceil(eventCount / 2))),
      seed,
      clock,
      catalog,
      events.events,
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
      events: events.events.length,
      appointments,
      expenses,
      eventNotes: planning.notes,
      questionnaires: planning.questionnaires,
    };
  })();
  return {
    ...summary,
    records: countRecords() - before,
    ms: Math.round(performance.now() - started),
  };
}
