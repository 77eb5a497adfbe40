import { randomBytes } from 'node:crypto';
import { LEAD_INCLUDES } from '../../api/schemas/leads.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { sql, type RecordAttrs, type StoredRecord } from '../db.js';
import {
  item,
  listBody,
  paging,
  parseInclude,
  reachWindow,
  refList,
  single,
  type Item,
} from '../envelope.js';
import { badRequest, notFound } from '../errors.js';
import { businessTimeZone, clock12, ymd, zonedIso } from '../time.js';
import {
  addLeadBooking,
  bookingsOfLeads,
  ensureLeadIndexes,
  pageOfRecords,
  type IndexFilter,
  leadBookingItem,
  leadBookingsHandlers,
  leadDisplayName,
  LeadView,
  referenceExists,
  type LeadBookingAttrs,
  type LeadBookingInput,
} from './lead-bookings.js';
import {
  customFields,
  leadQuestionsHandlers,
  mergeAnswers,
  readAnswers,
  type AnswerValue,
} from './lead-questions.js';
import { getPackage } from './offerings.js';
import { BodyFields, isEmail } from '../body-fields.js';

/**
 * Leads: inquiries from prospective customers.
 *
 * Record type `lead` (owned by the business): LeadAttrs below — what was asked for plus what
 * the service keeps (origin, token, flags, contact counters, brand). The event date, time,
 * length and package live on the lead's bookings (`lead_booking`, see lead-bookings.ts); the
 * lead's own `package_id`/`service_id` only remember what was first asked for. `email` is kept
 * trimmed and lower-cased (the email filter matches it exactly, through its index).
 * Record type `brand`: { id, name } — one default brand per business, made on first use.
 */
export interface LeadAttrs extends RecordAttrs {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
  company_name: string | null;
  phone: string | null;
  phone_normalized: string | null;
  staff_id: number | null;
  /** lead_source of the create body. */
  source: string | null;
  contact_preference: ContactPreference | null;
  lead_type: string | null;
  notes: string | null;
  estimated_budget: number | null;
  estimated_number_guests: number | null;
  venue_name: string | null;
  venue_address: string | null;
  venue_city: string | null;
  venue_state: string | null;
  venue_zip: string | null;
  venue_latitude: number | null;
  venue_longitude: number | null;
  venue_place_id: string | null;
  indoor_outdoor: IndoorOutdoor | null;
  service_id: number | null;
  package_id: number | null;
  referred_by_user_id: number | null;
  next_follow_up_on: string | null;
  subject: string | null;
  message: string | null;
  utm_source: string | null;
  utm_campaign: string | null;
  utm_medium: string | null;
  utm_term: string | null;
  utm_content: string | null;
  ad_click_id: string | null;
  /** Answers to the business's booking questions, keyed by column_name. */
  custom_questions: Record<string, AnswerValue>;
  contact_form_id: number | null;
  lead_event_type: string | null;
  origin: string;
  token: string;
  /** Zoned ISO timestamp. */
  created_at: string;
  brand_id: number;
  spam: boolean;
  archived: boolean;
  converted_to_event: boolean;
  times_contacted: number;
  last_contact_at: string | null;
}

/** Stand-ins where the spec names a third party's value without giving it. */
export const AUTOMATION_PLATFORM_SOURCE = 'Automation Platform';
export const DIRECTORY_SOURCE = 'Directory Listing';

export const LEAD_SOURCES = [
  'Manual Entry',
  'Lead Form',
  'Online Booking',
  'App',
  AUTOMATION_PLATFORM_SOURCE,
  'API',
  DIRECTORY_SOURCE,
] as const;
export const CONTACT_PREFERENCES = ['Email', 'Phone', 'Text Message'] as const;
export type ContactPreference = (typeof CONTACT_PREFERENCES)[number];
export const INDOOR_OUTDOOR = ['Indoor', 'Outdoor'] as const;
export type IndoorOutdoor = (typeof INDOOR_OUTDOOR)[number];

const RESUME_BOOKING_BASE = 'https://book.sandbox.example/leads';
const MAP_SEARCH_BASE = 'https://maps.example.com/?q=';

/** A new lead's fields, validated (readLeadInput does that for HTTP bodies). */
export interface LeadInput {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  company_name?: string | null;
  phone?: string | null;
  staff_id?: number | null;
  lead_source?: string | null;
  contact_preference?: ContactPreference | null;
  lead_type?: string | null;
  notes?: string | null;
  /** YYYY-MM-DD */
  event_date?: string | null;
  /** '6:00 PM' */
  event_time?: string | null;
  length_in_minutes?: number | null;
  estimated_budget?: number | null;
  estimated_number_guests?: number | null;
  venue_name?: string | null;
  venue_address?: string | null;
  venue_city?: string | null;
  venue_state?: string | null;
  venue_zip?: string | null;
  indoor_outdoor?: IndoorOutdoor | null;
  service_id?: number | null;
  package_id?: number | null;
  referred_by_user_id?: number | null;
  next_follow_up_on?: string | null;
  subject?: string | null;
  message?: string | null;
  utm_source?: string | null;
  utm_campaign?: string | null;
  utm_medium?: string | null;
  utm_term?: string | null;
  utm_content?: string | null;
  ad_click_id?: string | null;
  custom_questions?: Record<string, AnswerValue | null>;
  contact_form_id?: number | null;
}

export interface CreateLeadOptions {
  /** Defaults to 'API'. */
  origin?: string;
  /** ms since the epoch or an ISO string; defaults to now. */
  createdAt?: number | string;
  spam?: boolean;
  archived?: boolean;
  converted_to_event?: boolean;
  lead_event_type?: string | null;
  times_contacted?: number;
  /** Zoned ISO time staff last reached the lead (with times_contacted). */
  last_contact_at?: string | null;
  /** Recorded change notifications (webhooks) are skipped for bulk seeding. */
  silent?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Storage helpers

const LEAD_DEFAULTS: Omit<LeadAttrs, 'id' | 'email' | 'token' | 'created_at' | 'brand_id'> = {
  first_name: null,
  last_name: null,
  company_name: null,
  phone: null,
  phone_normalized: null,
  staff_id: null,
  source: null,
  contact_preference: null,
  lead_type: null,
  notes: null,
  estimated_budget: null,
  estimated_number_guests: null,
  venue_name: null,
  venue_address: null,
  venue_city: null,
  venue_state: null,
  venue_zip: null,
  venue_latitude: null,
  venue_longitude: null,
  venue_place_id: null,
  indoor_outdoor: null,
  service_id: null,
  package_id: null,
  referred_by_user_id: null,
  next_follow_up_on: null,
  subject: null,
  message: null,
  utm_source: null,
  utm_campaign: null,
  utm_medium: null,
  utm_term: null,
  utm_content: null,
  ad_click_id: null,
  custom_questions: {},
  contact_form_id: null,
  lead_event_type: null,
  origin: 'API',
  spam: false,
  archived: false,
  converted_to_event: false,
  times_contacted: 0,
  last_contact_at: null,
};

const LEAD_DEFAULT_KEYS = Object.keys(LEAD_DEFAULTS);

/**
 * A stored lead with every field present (records written directly may omit some). A
 * complete lead, the usual case, is returned as it is: copying 49 fields per lead was a
 * large share of a list page.
 */
export function withLeadDefaults(attrs: LeadAttrs): LeadAttrs {
  if (LEAD_DEFAULT_KEYS.every((key) => attrs[key] !== undefined)) return attrs;
  const out: LeadAttrs = { ...LEAD_DEFAULTS, ...attrs };
  for (const [key, value] of Object.entries(LEAD_DEFAULTS)) {
    if (out[key] === undefined) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** The business's default brand (every lead belongs to it). */
export function defaultBrand(
  ctx: SandboxContext,
  businessId: number,
): { id: number; name: string } {
  const row = sql(
    ctx.db,
    "SELECT id, json_extract(attrs, '$.name') AS name FROM records WHERE type = 'brand' AND business_id = ? AND deleted_at IS NULL ORDER BY id LIMIT 1",
  ).get(businessId) as { id: number; name: string } | undefined;
  if (row) return row;
  const business = sql(ctx.db, 'SELECT name FROM businesses WHERE id = ?').get(businessId) as
    { name: string } | undefined;
  const brand = ctx.records.insert(
    'brand',
    businessId,
    (id) => ({ id, name: business?.name ?? 'Default brand' }),
    { silent: true },
  );
  return { id: brand.id, name: brand.attrs.name };
}

/** '+15551234567' for North American numbers, '+<digits>' when sent with a +, else digits. */
export function normalizePhone(phone: string | null): string | null {
  if (phone === null) return null;
  const digits = phone.replace(/\D/g, '');
  if (digits === '') return null;
  if (phone.trim().startsWith('+')) return `+${digits}`;
  if (digits.length === 10) return `+1${digits}`;
  if (digits.length === 11 && digits.startsWith('1')) return `+${digits}`;
  return digits;
}

function randomLeadToken(): string {
  return randomBytes(12).toString('hex');
}

// ---------------------------------------------------------------------------------------------
// Creating and changing leads

/** Validates a create body against the spec's table; throws one 422 naming every field. */
export function readLeadInput(
  ctx: SandboxContext,
  businessId: number,
  body: Record<string, unknown>,
): LeadInput {
  const f = new BodyFields(body);
  const input: Partial<LeadInput> & Record<string, unknown> = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined && value !== null) input[name] = value;
  };

  const email = f.string('email');
  if (email === null || (email === undefined && !f.sent('email'))) {
    f.errors.add('email', "can't be blank");
  } else if (email !== undefined && !isEmail(email)) {
    f.errors.add('email', 'is invalid');
  } else put('email', email);

  for (const name of [
    'first_name',
    'last_name',
    'phone',
    'company_name',
    'lead_type',
    'notes',
    'venue_name',
    'venue_city',
    'venue_state',
    'venue_zip',
    'subject',
    'message',
    'utm_source',
    'utm_campaign',
    'utm_medium',
    'utm_term',
    'utm_content',
    'ad_click_id',
  ]) {
    put(name, f.string(name));
  }
  // venue_street is the earlier name of venue_address; the current name wins.
  const venueStreet = f.string('venue_street');
  put('venue_address', f.string('venue_address') ?? venueStreet);

  put('lead_source', f.oneOf('lead_source', LEAD_SOURCES));
  put('contact_preference', f.oneOf('contact_preference', CONTACT_PREFERENCES));
  put('indoor_outdoor', f.oneOf('indoor_outdoor', INDOOR_OUTDOOR));
  put('event_date', f.date('event_date'));
  put('next_follow_up_on', f.date('next_follow_up_on'));
  put('event_time', f.time('event_time'));
  // event_length is the earlier name of length_in_minutes; the current name wins.
  const eventLength = f.integer('event_length');
  put('length_in_minutes', f.integer('length_in_minutes') ?? eventLength);
  put('estimated_budget', f.number('estimated_budget'));
  put('estimated_number_guests', f.integer('estimated_number_guests', 0));
  put('contact_form_id', f.integer('contact_form_id'));

  const checkRef = (
    field: string,
    kind: 'package' | 'service' | 'staff',
    target: keyof LeadInput,
  ): boolean => {
    const id = f.integer(field);
    if (id === undefined || id === null) return false;
    if (!referenceExists(ctx, businessId, kind, id)) f.errors.add(field, 'must exist');
    else put(target, id);
    return true;
  };
  checkRef('package_id', 'package', 'package_id');
  checkRef('service_id', 'service', 'service_id');
  // employee_id is the earlier name of staff_id; staff_id wins when both are sent.
  if (!checkRef('staff_id', 'staff', 'staff_id')) checkRef('employee_id', 'staff', 'staff_id');
  const referrer = f.integer('referred_by_user_id');
  if (typeof referrer === 'number') {
    const exists = sql(ctx.db, 'SELECT 1 FROM users WHERE id = ? AND business_id = ?').get(
      referrer,
      businessId,
    );
    if (!exists) f.errors.add('referred_by_user_id', 'must exist');
    else put('referred_by_user_id', referrer);
  }

  if (f.sent('custom_questions') && body.custom_questions !== null) {
    put('custom_questions', readAnswers(ctx, businessId, body.custom_questions, f.errors));
  }
  f.errors.throwIfAny();
  return input as LeadInput;
}

/** Module level, not inside newLeadAttrs: tsx re-names a nested arrow on every call. */
const v = <T>(value: T | null | undefined): T | null => value ?? null;

function createdAtIso(option: number | string | undefined, now: number, timeZone: string): string {
  const ms = option === undefined ? now : typeof option === 'number' ? option : Date.parse(option);
  return zonedIso(Number.isNaN(ms) ? now : ms, timeZone);
}

/**
 * The stored attributes of a new lead: pure, so createLead and the seed generator's bulk path
 * write the same shape. `stamp` carries what createLead looks up or draws (token, zoned
 * created_at, brand).
 */
export function newLeadAttrs(
  id: number,
  input: LeadInput,
  stamp: { token: string; createdAt: string; brandId: number },
  options: CreateLeadOptions = {},
): LeadAttrs {
  const answers: Record<string, AnswerValue> = mergeAnswers({}, input.custom_questions ?? {});
  return {
    id,
    email: input.email.trim().toLowerCase(),
    first_name: v(input.first_name),
    last_name: v(input.last_name),
    company_name: v(input.company_name),
    phone: v(input.phone),
    phone_normalized: normalizePhone(v(input.phone)),
    staff_id: v(input.staff_id),
    source: v(input.lead_source),
    contact_preference: v(input.contact_preference),
    lead_type: v(input.lead_type),
    notes: v(input.notes),
    estimated_budget: v(input.estimated_budget),
    estimated_number_guests: v(input.estimated_number_guests),
    venue_name: v(input.venue_name),
    venue_address: v(input.venue_address),
    venue_city: v(input.venue_city),
    venue_state: v(input.venue_state),
    venue_zip: v(input.venue_zip),
    venue_latitude: null,
    venue_longitude: null,
    venue_place_id: null,
    indoor_outdoor: v(input.indoor_outdoor),
    service_id: v(input.service_id),
    package_id: v(input.package_id),
    referred_by_user_id: v(input.referred_by_user_id),
    next_follow_up_on: v(input.next_follow_up_on),
    subject: v(input.subject),
    message: v(input.message),
    utm_source: v(input.utm_source),
    utm_campaign: v(input.utm_campaign),
    utm_medium: v(input.utm_medium),
    utm_term: v(input.utm_term),
    utm_content: v(input.utm_content),
    ad_click_id: v(input.ad_click_id),
    custom_questions: answers,
    contact_form_id: v(input.contact_form_id),
    lead_event_type: options.lead_event_type ?? null,
    origin: options.origin ?? 'API',
    token: stamp.token,
    created_at: stamp.createdAt,
    brand_id: stamp.brandId,
    spam: options.spam ?? false,
    archived: options.archived ?? false,
    converted_to_event: options.converted_to_event ?? false,
    times_contacted: options.times_contacted ?? 0,
    last_contact_at: options.last_contact_at ?? null,
  };
}

/**
 * Creates a lead (and its primary booking when a date, time, length, package or service is
 * given). Input is trusted: HTTP bodies go through readLeadInput first.
 */
export function createLead(
  ctx: SandboxContext,
  businessId: number,
  input: LeadInput,
  options: CreateLeadOptions = {},
): StoredRecord<LeadAttrs> {
  ensureLeadIndexes(ctx.db);
  const timeZone = businessTimeZone(ctx.db, businessId);
  const brand = defaultBrand(ctx, businessId);
  const insertOptions = { silent: options.silent ?? false };
  const lead = ctx.records.insert<LeadAttrs>(
    'lead',
    businessId,
    (id) =>
      newLeadAttrs(
        id,
        input,
        {
          token: randomLeadToken(),
          createdAt: createdAtIso(options.createdAt, ctx.clock.now(), timeZone),
          brandId: brand.id,
        },
        options,
      ),
    insertOptions,
  );
  const booking: LeadBookingInput = {};
  if (input.event_date) booking.starts_at_date = input.event_date;
  if (input.event_time) booking.starts_at_time = input.event_time;
  if (input.length_in_minutes) booking.length_in_minutes = input.length_in_minutes;
  if (input.package_id) booking.event_type_id = input.package_id;
  if (input.service_id) booking.event_category_id = input.service_id;
  if (Object.keys(booking).length > 0) {
    if (input.staff_id) booking.staff_id = input.staff_id;
    addLeadBooking(ctx, lead, booking);
  }
  return lead;
}

/** Changes a lead as staff would (notes, flags, contact counters...). */
export function updateLead(
  ctx: SandboxContext,
  record: StoredRecord<LeadAttrs>,
  patch: Partial<LeadAttrs>,
): StoredRecord<LeadAttrs> {
  const next: Partial<LeadAttrs> = { ...patch };
  if (patch.email !== undefined) next.email = patch.email.trim().toLowerCase();
  if (patch.phone !== undefined) next.phone_normalized = normalizePhone(patch.phone);
  return ctx.records.update(record, next);
}

// ---------------------------------------------------------------------------------------------
// Serializing

const PLURAL = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Rails' time_ago_in_words, which the service uses for *_description fields. */
export function timeAgoInWords(fromMs: number, nowMs: number): string {
  const minutes = Math.round(Math.max(0, nowMs - fromMs) / 60_000);
  if (minutes < 1) return 'less than a minute ago';
  if (minutes < 45) return `${PLURAL(minutes, 'minute')} ago`;
  if (minutes < 90) return 'about 1 hour ago';
  if (minutes < 1440) return `about ${PLURAL(Math.round(minutes / 60), 'hour')} ago`;
  if (minutes < 2520) return '1 day ago';
  if (minutes < 43_200) return `${PLURAL(Math.round(minutes / 1440), 'day')} ago`;
  if (minutes < 86_400) return `about ${PLURAL(Math.round(minutes / 43_200), 'month')} ago`;
  if (minutes < 525_600) return `${PLURAL(Math.round(minutes / 43_200), 'month')} ago`;
  const years = Math.floor(minutes / 525_600);
  const rest = minutes % 525_600;
  if (rest < 131_400) return `about ${PLURAL(years, 'year')} ago`;
  if (rest < 394_200) return `over ${PLURAL(years, 'year')} ago`;
  return `almost ${PLURAL(years + 1, 'year')} ago`;
}

/** '3 hours', '1 hour 30 minutes', '2 days'; null without a length. */
function lengthWords(minutes: number | null, days: number | null): string | null {
  if (minutes === null) return days === null ? null : PLURAL(days, 'day');
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  const parts = [h > 0 ? PLURAL(h, 'hour') : '', m > 0 || h === 0 ? PLURAL(m, 'minute') : ''];
  return parts.filter(Boolean).join(' ');
}

function mapUrl(a: LeadAttrs): string | null {
  const parts = [a.venue_name, a.venue_address, a.venue_city, a.venue_state, a.venue_zip].filter(
    (p): p is string => Boolean(p),
  );
  return parts.length === 0 ? null : `${MAP_SEARCH_BASE}${encodeURIComponent(parts.join(', '))}`;
}

/**
 * A lead's attributes, with its primary booking's date, time, length, package and service
 * fields flattened in (without a booking they come from what the lead asked for, or are empty).
 */
export function leadAttributes(
  view: LeadView,
  record: StoredRecord<LeadAttrs>,
  primary: StoredRecord<LeadBookingAttrs> | undefined,
) {
  const { ctx } = view;
  const a = withLeadDefaults(record.attrs);
  const b = primary?.attrs;
  const start = LeadView.ms(b?.starts_at ?? null);
  const ranges = b
    ? view.ranges(b)
    : { formatted_date_range: '', formatted_time_range: '', formatted_datetime_range: '' };
  const pkg =
    !b && a.package_id !== null
      ? getPackage(ctx.records, record.businessId, a.package_id)
      : undefined;
  const serviceName =
    b?.service_name ??
    (a.service_id !== null
      ? (ctx.records.get('service', record.businessId, a.service_id)?.attrs.name as
          string | undefined)
      : undefined) ??
    pkg?.attrs.service_name ??
    null;
  const minutes = b?.length_in_minutes ?? null;
  const referrer =
    a.referred_by_user_id === null
      ? undefined
      : (sql(ctx.db, 'SELECT name, email FROM users WHERE id = ?').get(a.referred_by_user_id) as
          { name: string; email: string } | undefined);
  const createdMs = Date.parse(a.created_at);
  return {
    id: a.id,
    email: a.email,
    first_name: a.first_name,
    last_name: a.last_name,
    company_name: a.company_name,
    phone: a.phone,
    phone_normalized: a.phone_normalized,
    event_date: start === null ? null : ymd(start, view.timeZone),
    event_time:
      b === undefined || b.starts_at_minutes === null ? null : clock12(b.starts_at_minutes),
    venue_name: a.venue_name,
    venue_address: a.venue_address,
    venue_city: a.venue_city,
    venue_state: a.venue_state,
    venue_zip: a.venue_zip,
    venue_map_url: mapUrl(a),
    venue_latitude: a.venue_latitude,
    venue_longitude: a.venue_longitude,
    venue_place_id: a.venue_place_id,
    estimated_budget: a.estimated_budget,
    estimated_number_guests: a.estimated_number_guests,
    subject: a.subject,
    message: a.message,
    source: a.source,
    notes: a.notes,
    lead_event_type: a.lead_event_type,
    lead_type: a.lead_type,
    last_contact_at: a.last_contact_at,
    times_contacted: a.times_contacted,
    next_follow_up_on: a.next_follow_up_on,
    origin: a.origin,
    length_in_hours: minutes === null ? null : Math.round((minutes / 60) * 100) / 100,
    length_in_minutes: minutes,
    length_in_days: b?.length_in_days ?? null,
    length: lengthWords(minutes, b?.length_in_days ?? null),
    indoor_outdoor: a.indoor_outdoor,
    starts_at: b?.starts_at ?? null,
    ends_at: b?.ends_at ?? null,
    setup_at: null,
    pickup_at: null,
    dropoff_at: null,
    title: leadDisplayName(a),
    brand_id: a.brand_id,
    brand_name: view.brandName(a.brand_id),
    created_at: a.created_at,
    token: a.token,
    spam: a.spam,
    archived: a.archived,
    converted_to_event: a.converted_to_event,
    event_type_id: b ? b.event_type_id : a.package_id,
    utm_source: a.utm_source,
    utm_campaign: a.utm_campaign,
    utm_medium: a.utm_medium,
    utm_term: a.utm_term,
    utm_content: a.utm_content,
    ad_click_id: a.ad_click_id,
    package_name: b ? b.name : (pkg?.attrs.name ?? null),
    package_group_name: b ? b.package_group_name : (pkg?.attrs.package_group_name ?? null),
    service_name: serviceName,
    formatted_time_range: ranges.formatted_time_range,
    formatted_date_range: ranges.formatted_date_range,
    formatted_datetime_range: ranges.formatted_datetime_range,
    custom_fields: customFields(ctx, record),
    created_at_description: Number.isNaN(createdMs)
      ? ''
      : timeAgoInWords(createdMs, ctx.clock.now()),
    referred_by_user_id: a.referred_by_user_id,
    referred_by_user_name: referrer?.name ?? null,
    referred_by_user_email: referrer?.email ?? null,
    resume_booking_link: `${RESUME_BOOKING_BASE}/${a.token}/resume`,
  };
}

/**
 * A lead item. `bookings` are its live bookings in id order (the first is primary);
 * relationships.lead_bookings is filled when `withBookingRefs` (single reads, include).
 */
export function leadItem(
  view: LeadView,
  record: StoredRecord<LeadAttrs>,
  bookings: readonly StoredRecord<LeadBookingAttrs>[],
  withBookingRefs: boolean,
): Item {
  return item(
    'lead',
    leadAttributes(view, record, bookings[0]),
    withBookingRefs
      ? {
          lead_bookings: refList(
            'lead_booking',
            bookings.map((b) => b.id),
          ),
        }
      : {},
  );
}

/** A single lead as GET /leads/{id} answers it (optionally with its bookings sideloaded). */
export function leadBody(view: LeadView, record: StoredRecord<LeadAttrs>, sideload = false) {
  const bookings = bookingsOfLeads(view.ctx, [record.id]).get(record.id) ?? [];
  return single(
    leadItem(view, record, bookings, true),
    sideload ? bookings.map((b) => leadBookingItem(view, b)) : undefined,
  );
}

// ---------------------------------------------------------------------------------------------
// Listing

function stringParam(query: Record<string, unknown>, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') {
    throw badRequest('invalid_parameter', `${name} must be given once, as a string`);
  }
  const value = raw.trim();
  return value === '' ? undefined : value;
}

/** FTS5 query: every word must start a word of the lead (words quoted, so no operators). */
function ftsQuery(text: string): string | undefined {
  const terms = text
    .split(/\s+/)
    .map((t) => t.replace(/"/g, ''))
    .filter((t) => /[\p{L}\p{N}]/u.test(t));
  if (terms.length === 0) return undefined;
  return terms.map((t) => `"${t}"*`).join(' ');
}

function listLeads(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const include = parseInclude(query.include, LEAD_INCLUDES);
  const p = paging(query, ctx.limits);
  const filters: IndexFilter[] = [];
  const email = stringParam(query, 'email');
  if (email !== undefined) filters.push({ where: 'email = ?', params: [email.toLowerCase()] });
  for (const name of ['origin', 'lead_type', 'source'] as const) {
    const value = stringParam(query, name);
    if (value !== undefined) filters.push({ where: `${name} = ?`, params: [value] });
  }
  const text = stringParam(query, 'text');
  const match = text === undefined ? undefined : ftsQuery(text);
  if (match !== undefined) {
    filters.push({
      where: 'id IN (SELECT rowid FROM lead_search WHERE lead_search MATCH ?)',
      params: [match],
    });
  }
  const { records: leads, total } = pageOfRecords<LeadAttrs>(
    ctx,
    'lead',
    caller.businessId,
    filters,
    reachWindow(p, ctx.limits),
  );
  const bookings = bookingsOfLeads(
    ctx,
    leads.map((l) => l.id),
  );
  const view = LeadView.of(ctx, caller);
  const sideload = include.has('lead_bookings');
  const data = leads.map((lead) => leadItem(view, lead, bookings.get(lead.id) ?? [], sideload));
  const included = sideload
    ? leads.flatMap((lead) => (bookings.get(lead.id) ?? []).map((b) => leadBookingItem(view, b)))
    : undefined;
  return listBody(data, total, p, included);
}

// ---------------------------------------------------------------------------------------------
// Handlers

export function leadsHandlers(): Handlers {
  return {
    'leads.create': ({ ctx, caller, body }) => {
      const input = readLeadInput(ctx, caller.businessId, body as Record<string, unknown>);
      const lead = createLead(ctx, caller.businessId, input, {
        origin: caller.kind === 'key' ? 'API' : 'App',
      });
      return leadBody(LeadView.of(ctx, caller), lead);
    },

    'leads.list': ({ ctx, caller, query }) => listLeads(ctx, caller, query),

    'leads.get': ({ ctx, caller, params, query }) => {
      const include = parseInclude(query.include, LEAD_INCLUDES);
      const id = Number(params.lead_id);
      const lead = ctx.records.get<LeadAttrs>('lead', caller.businessId, id);
      if (!lead) throw notFound('Lead', id);
      return leadBody(LeadView.of(ctx, caller), lead, include.has('lead_bookings'));
    },

    ...leadQuestionsHandlers(),
    ...leadBookingsHandlers(),
  };
}
