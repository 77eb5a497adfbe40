import { randomBytes } from 'node:crypto';
import type { Caller } from '../auth.js';
import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import {
  item,
  listBody,
  money,
  paging,
  listPage,
  refList,
  refOne,
  single,
  type Item,
} from '../envelope.js';
import { isEmail, readNumber, type NumberRule } from '../body-fields.js';
import { badRequest, FieldErrors, humanize, notFound } from '../errors.js';
import { findUser, Identity } from '../identity.js';
import {
  addDays,
  businessTimeZone,
  formattedRanges,
  fromZoned,
  longDate,
  mdy,
  parseMdy,
  parseTime12,
  parseYmd,
  time12,
  ymd,
  zonedIso,
  type DateParts,
} from '../time.js';
import { businessCurrency, getAddOn, type AddOnAttrs } from './add-ons.js';
import { getBackdrop, getPackage, type PackageAttrs } from './offerings.js';

/**
 * Events (proposals and confirmed bookings) and their event bookings.
 *
 * Record types (times are stored as UTC ISO strings so they compare as text; responses show
 * them in the business's time zone):
 * - 'event': EventAttrs below. Its children:
 *   - 'event_booking' (parentId = event): EventBookingAttrs below.
 *   - 'event_user' (parentId = event): a customer on the event { id, event_id, user_id, name,
 *     email, phone }.
 *   - 'contact' (parentId = event): an additional contact { id, event_id, name, email, phone,
 *     company_name, description, street, city, state_code, postal_code }.
 *   - 'event_staff_member' (parentId = event): { id, event_id, user_id } kept in step with
 *     EventAttrs.assigned_staff_ids.
 *   - 'event_note' (parentId = event): see event-notes.ts.
 * - 'event_add_on' (parentId = event booking): the booking's own copy of an add-on
 *   { id, event_booking_id, add_on_id, name, quantity, price_cents }; deleting the catalog
 *   add-on leaves it alone.
 * - 'event_photobooth_background' (parentId = event booking): { id, event_booking_id,
 *   photobooth_background_id, name }.
 *
 * Statuses: 'confirmed', 'proposal_date_reserved' (both hold inventory) and 'proposal' (a
 * proposal that does not reserve the date). canceled, completed and postponed are flags beside
 * the status; canceled and postponed events no longer hold inventory.
 */
export type EventStatus = 'confirmed' | 'proposal_date_reserved' | 'proposal';
export const CONTACT_TYPES = ['New Customer', 'Existing Customer', 'None'] as const;
export type ContactType = (typeof CONTACT_TYPES)[number];

export interface EventAttrs extends Record<string, unknown> {
  id: number;
  title: string;
  custom_title: string | null;
  status: EventStatus;
  booked_at: string | null;
  created_at: string;
  created_via: string;
  venue_name: string | null;
  venue_address: string | null;
  venue_city: string | null;
  venue_state: string | null;
  venue_zip: string | null;
  venue_place_id: string | null;
  latitude: number | null;
  longitude: number | null;
  public_notes: string | null;
  private_notes: string | null;
  completed: boolean;
  canceled: boolean;
  postponed: boolean;
  signature_collected: boolean;
  add_tax: boolean;
  add_travel: boolean;
  tax_rate: string;
  total_amount_cents: number | null;
  paid_amount_cents: number | null;
  custom_deposit_amount_cents: number | null;
  proposal_valid_through: string | null;
  contact_type: ContactType;
  assigned_staff_ids: number[];
  lead_id: number | null;
  brand_id: number | null;
  source: string | null;
  estimated_number_guests: number | null;
  indoor_outdoor: string | null;
  lead_event_type: string | null;
  contact_preference: string | null;
  utm_source: string | null;
  utm_campaign: string | null;
  utm_medium: string | null;
  utm_term: string | null;
  utm_content: string | null;
  ad_click_id: string | null;
  referred_by_user_id: number | null;
  token: string;
  invoice_number: string;
  /** Span of the event's bookings. */
  starts_at: string | null;
  ends_at: string | null;
  invitation_sent_at: string | null;
  confirmation_emails_sent_at: string | null;
}

export interface EventBookingAttrs extends Record<string, unknown> {
  id: number;
  event_id: number;
  event_type_id: number;
  name: string;
  title: string;
  package_group_name: string;
  service_name: string;
  description_html: string;
  preview_image: string;
  starts_at: string;
  ends_at: string;
  override_ends_at: boolean;
  date_mode: 'date_time';
  length_in_minutes: number;
  length_in_days: number | null;
  units: number | null;
  price_method: string;
  /** The booking's computed price (package only; add-ons are priced on their own records). */
  price_cents: number;
  override_price_cents: number | null;
  taxable: boolean;
  backdrop_id: number | null;
  add_on_ids: number[];
  one_off_custom_title: string | null;
  custom_description_html: string | null;
}

export interface EventAddOnAttrs extends Record<string, unknown> {
  id: number;
  event_booking_id: number;
  add_on_id: number;
  name: string;
  quantity: number;
  price_cents: number;
}

interface EventUserAttrs extends Record<string, unknown> {
  id: number;
  event_id: number;
  user_id: number;
  name: string;
  email: string;
  phone: string | null;
}

interface ContactAttrs extends Record<string, unknown> {
  id: number;
  event_id: number;
  name: string | null;
  email: string | null;
  phone: string | null;
  company_name: string | null;
  description: string | null;
  street: string | null;
  city: string | null;
  state_code: string | null;
  postal_code: string | null;
}

/** Tax rate applied when add_tax is set (the business settings holding it are not modelled). */
export const DEFAULT_TAX_RATE = '7.0';
/** Share of the total asked as deposit when no custom deposit is set. */
const DEPOSIT_SHARE = 0.25;
const APP_ORIGIN = 'https://app.sandbox.invalid';

const STATUS_LABEL: Record<EventStatus, string> = {
  confirmed: 'Confirmed',
  proposal_date_reserved: 'Proposal (Date Reserved)',
  proposal: 'Proposal',
};

const blank = (v: unknown): boolean =>
  v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/**
 * Typed readers over a body; a wrong type is recorded as a 422 message and reads as absent.
 * Nested entries prefix their error keys and name the entry in the message.
 */
function reader(body: Record<string, unknown>, problems: FieldErrors, prefix = '', entry = '') {
  const label = (field: string) =>
    entry ? `${entry} ${humanize(field).toLowerCase()}` : humanize(field);
  const fail = (field: string, message: string) =>
    problems.add(`${prefix}${field}`, message, label(field));
  const numeric = (field: string, rule: NumberRule): number | undefined => {
    const v = body[field];
    if (blank(v)) return undefined;
    const read = readNumber(v, { ...rule, text: true });
    if (typeof read === 'string') {
      fail(field, read);
      return undefined;
    }
    return read;
  };
  const decimal = (field: string): number | undefined => numeric(field, {});
  return {
    fail,
    str(field: string): string | null {
      const v = body[field];
      if (blank(v)) return null;
      if (typeof v === 'number') return String(v);
      if (typeof v !== 'string') {
        fail(field, 'must be a string');
        return null;
      }
      return v.trim();
    },
    bool(field: string): boolean | undefined {
      const v = body[field];
      if (blank(v)) return undefined;
      if (v === true || v === 'true' || v === 1 || v === '1') return true;
      if (v === false || v === 'false' || v === 0 || v === '0') return false;
      fail(field, 'must be true or false');
      return undefined;
    },
    int: (field: string, min = 1): number | undefined => numeric(field, { integer: true, min }),
    decimal,
    /** Money as a number or decimal string → cents, never negative. */
    cents(field: string): number | undefined {
      const n = numeric(field, { min: 0 });
      return n === undefined ? undefined : Math.round(n * 100);
    },
  };
}

/* ------------------------------------------------------------------ lookups */

interface UserInfo {
  id: number;
  name: string;
  email: string;
  role: string;
}

function userOf(ctx: SandboxContext, businessId: number, id: number): UserInfo | undefined {
  return findUser(ctx.db, businessId, id);
}

function businessName(ctx: SandboxContext, businessId: number): string {
  const row = ctx.db.prepare('SELECT name FROM businesses WHERE id = ?').get(businessId) as
    { name: string } | undefined;
  return row?.name ?? '';
}

function abbreviation(name: string): string {
  return name
    .split(/\s+/)
    .filter((w) => w !== '')
    .map((w) => w.charAt(0).toUpperCase())
    .join('');
}

export function getEvent(
  ctx: SandboxContext,
  businessId: number,
  id: number,
): StoredRecord<EventAttrs> | undefined {
  return ctx.records.get<EventAttrs>('event', businessId, id);
}

/** Bookings of an event in start order. */
export function eventBookings(
  ctx: SandboxContext,
  eventId: number,
): StoredRecord<EventBookingAttrs>[] {
  return ctx.records
    .children<EventBookingAttrs>('event_booking', eventId)
    .sort((a, b) => a.attrs.starts_at.localeCompare(b.attrs.starts_at) || a.id - b.id);
}

/**
 * Whether the caller may see the event: unassigned_event_read covers every event,
 * assigned_event_read only those the caller is assigned to.
 */
export function canSeeEvent(
  caller: Pick<Caller, 'userId' | 'permissions'>,
  event: StoredRecord<EventAttrs>,
): boolean {
  if (caller.permissions.has('unassigned_event_read')) return true;
  return (
    caller.permissions.has('assigned_event_read') &&
    event.attrs.assigned_staff_ids.includes(caller.userId)
  );
}

/** Pricing follows the same split: unassigned_…_pricing for all, assigned_…_pricing for own. */
export function canSeeEventPricing(
  caller: Pick<Caller, 'userId' | 'permissions'>,
  event: StoredRecord<EventAttrs>,
): boolean {
  if (caller.permissions.has('unassigned_event_read_pricing')) return true;
  return (
    caller.permissions.has('assigned_event_read_pricing') &&
    event.attrs.assigned_staff_ids.includes(caller.userId)
  );
}

/** A live event the caller may see, or 404. */
export function findVisibleEvent(
  ctx: SandboxContext,
  caller: Caller,
  id: number | string | undefined,
): StoredRecord<EventAttrs> {
  const event = getEvent(ctx, caller.businessId, Number(id));
  if (!event || !canSeeEvent(caller, event)) throw notFound('Event', id ?? '');
  return event;
}

/** Bookings whose events hold inventory: live, confirmed or date-reserved, not canceled/postponed. */
export function holdsInventory(event: StoredRecord<EventAttrs> | undefined): boolean {
  if (!event) return false;
  const a = event.attrs;
  return (
    (a.status === 'confirmed' || a.status === 'proposal_date_reserved') &&
    !a.canceled &&
    !a.postponed
  );
}

export interface HeldBooking {
  booking: StoredRecord<EventBookingAttrs>;
  event: StoredRecord<EventAttrs>;
}

/** Event bookings holding inventory that overlap [startMs, endMs). */
export function heldBookings(
  ctx: SandboxContext,
  businessId: number,
  startMs: number,
  endMs: number,
): HeldBooking[] {
  const { records } = ctx.records.list<EventBookingAttrs>('event_booking', businessId, {
    where: "json_extract(attrs, '$.starts_at') < ? AND json_extract(attrs, '$.ends_at') > ?",
    params: [new Date(endMs).toISOString(), new Date(startMs).toISOString()],
    orderBy: "json_extract(attrs, '$.starts_at'), id",
  });
  const events = new Map<number, StoredRecord<EventAttrs> | undefined>();
  const out: HeldBooking[] = [];
  for (const booking of records) {
    const eventId = booking.attrs.event_id;
    if (!events.has(eventId)) events.set(eventId, getEvent(ctx, businessId, eventId));
    const event = events.get(eventId);
    if (event && holdsInventory(event)) out.push({ booking, event });
  }
  return out;
}

/* ------------------------------------------------------------------ rendering */

function iso(ctx: SandboxContext, businessId: number, utc: string | null): string | null {
  return utc === null ? null : zonedIso(Date.parse(utc), businessTimeZone(ctx.db, businessId));
}

function statusWithContext(a: EventAttrs, tz: string): string {
  if (a.canceled) return `Canceled (${STATUS_LABEL[a.status]})`;
  if (a.postponed) return `Postponed (${STATUS_LABEL[a.status]})`;
  if (a.completed) return 'Completed';
  if (a.status === 'confirmed' && a.booked_at) {
    return `Confirmed (booked ${longDate(Date.parse(a.booked_at), tz)})`;
  }
  if (a.status !== 'confirmed' && a.proposal_valid_through) {
    const [y, m, d] = a.proposal_valid_through.split('-');
    return `${STATUS_LABEL[a.status]} - valid through ${m}-${d}-${y}`;
  }
  return STATUS_LABEL[a.status];
}

function expiredProposal(ctx: SandboxContext, event: StoredRecord<EventAttrs>): boolean {
  const a = event.attrs;
  if (a.status === 'confirmed' || !a.proposal_valid_through) return false;
  const today = ymd(ctx.clock.now(), businessTimeZone(ctx.db, event.businessId));
  return a.proposal_valid_through < today;
}

function staffOf(ctx: SandboxContext, event: StoredRecord<EventAttrs>): UserInfo[] {
  return event.attrs.assigned_staff_ids
    .map((id) => userOf(ctx, event.businessId, id))
    .filter((u): u is UserInfo => u !== undefined);
}

const joined = (values: readonly (string | number | null | undefined)[]): string =>
  values.filter((v) => v !== null && v !== undefined && v !== '').join(', ');

/** The event's total before payments: bookings, their add-ons and tax, or the override. */
function eventTotals(ctx: SandboxContext, event: StoredRecord<EventAttrs>) {
  let subtotal = 0;
  for (const booking of eventBookings(ctx, event.id)) {
    subtotal += booking.attrs.override_price_cents ?? booking.attrs.price_cents;
    for (const addOn of ctx.records.children<EventAddOnAttrs>('event_add_on', booking.id)) {
      subtotal += addOn.attrs.price_cents * addOn.attrs.quantity;
    }
  }
  const a = event.attrs;
  const tax = a.add_tax ? Math.round((subtotal * Number(a.tax_rate)) / 100) : 0;
  const total = a.total_amount_cents ?? subtotal + tax;
  const paid = a.paid_amount_cents ?? 0;
  const deposit = a.custom_deposit_amount_cents ?? Math.round(total * DEPOSIT_SHARE);
  return {
    starting: total,
    depositDue: Math.max(0, deposit - paid),
    balanceDue: Math.max(0, total - paid),
  };
}

export interface Viewer {
  userId: number;
  permissions: ReadonlySet<string>;
}

export function eventItem(
  ctx: SandboxContext,
  event: StoredRecord<EventAttrs>,
  viewer: Viewer,
): Item {
  const a = event.attrs;
  const tz = businessTimeZone(ctx.db, event.businessId);
  const currency = businessCurrency(ctx, event.businessId);
  const bookings = eventBookings(ctx, event.id);
  const primary = bookings[0]?.attrs;
  const startMs = a.starts_at ? Date.parse(a.starts_at) : null;
  const endMs = a.ends_at ? Date.parse(a.ends_at) : null;
  const bookedMs = a.booked_at ? Date.parse(a.booked_at) : null;
  const minutes =
    startMs !== null && endMs !== null ? Math.round((endMs - startMs) / 60_000) : null;

  const customers = ctx.records.children<EventUserAttrs>('event_user', event.id);
  const contacts = ctx.records.children<ContactAttrs>('contact', event.id);
  const staff = staffOf(ctx, event);
  const staffMembers = ctx.records.children('event_staff_member', event.id);
  const notes = ctx.records.children('event_note', event.id);
  const addOns = bookings.flatMap((b) =>
    ctx.records.children<EventAddOnAttrs>('event_add_on', b.id),
  );
  const backdrops = bookings.flatMap((b) =>
    ctx.records.children<{ id: number; name: string }>('event_photobooth_background', b.id),
  );
  const referrer =
    a.referred_by_user_id !== null
      ? userOf(ctx, event.businessId, a.referred_by_user_id)
      : undefined;

  const pricing = canSeeEventPricing(viewer, event);
  const totals = pricing ? eventTotals(ctx, event) : undefined;
  const address = joined([a.venue_address, a.venue_city, a.venue_state, a.venue_zip]);

  return item(
    'event',
    {
      id: a.id,
      title: a.title,
      status: a.status,
      formatted_status: STATUS_LABEL[a.status],
      formatted_status_with_context: statusWithContext(a, tz),
      booked_at: iso(ctx, event.businessId, a.booked_at),
      created_at: iso(ctx, event.businessId, a.created_at),
      created_via: a.created_via,
      venue_name: a.venue_name,
      venue_address: a.venue_address,
      venue_city: a.venue_city,
      venue_state: a.venue_state,
      venue_zip: a.venue_zip,
      venue_map_url: address ? `https://maps.example.com/?q=${encodeURIComponent(address)}` : null,
      venue_place_id: a.venue_place_id,
      public_notes: a.public_notes,
      private_notes: a.private_notes,
      coupon_code: null,
      photo_album_url: null,
      photo_album_instructions: null,
      video_url: null,
      video_album_instructions: null,
      completed: a.completed,
      canceled: a.canceled,
      postponed: a.postponed,
      invoice_number: a.invoice_number,
      billable_distance: null,
      total_distance: null,
      distance_unit: 'mi',
      latitude: a.latitude,
      longitude: a.longitude,
      tax_rate: a.add_tax ? a.tax_rate : '0.0',
      source: a.source,
      estimated_number_guests: a.estimated_number_guests,
      indoor_outdoor: a.indoor_outdoor,
      lead_event_type: a.lead_event_type,
      contact_preference: a.contact_preference,
      po_number: null,
      stair_setup: null,
      token: a.token,
      utm_source: a.utm_source,
      utm_campaign: a.utm_campaign,
      utm_medium: a.utm_medium,
      utm_term: a.utm_term,
      utm_content: a.utm_content,
      ad_click_id: a.ad_click_id,
      starts_at: iso(ctx, event.businessId, a.starts_at),
      ends_at: iso(ctx, event.businessId, a.ends_at),
      length_in_minutes: minutes,
      length_in_hours: minutes === null ? null : Math.round((minutes / 60) * 100) / 100,
      ...money('starting_balance', totals ? totals.starting : null, currency),
      ...money('deposit_amount_due', totals ? totals.depositDue : null, currency),
      ...money('custom_deposit_amount', totals ? a.custom_deposit_amount_cents : null, currency),
      ...money('balance_amount_due', totals ? totals.balanceDue : null, currency),
      starts_at_date: startMs === null ? null : mdy(startMs, tz),
      starts_at_date_iso8601: startMs === null ? null : ymd(startMs, tz),
      starts_at_time: startMs === null ? null : time12(startMs, tz),
      invoice_date: bookedMs === null ? null : mdy(bookedMs, tz),
      invoice_date_iso8601: bookedMs === null ? null : ymd(bookedMs, tz),
      proposal_valid_through: a.proposal_valid_through,
      package_name: primary?.name ?? null,
      package_group_name: primary?.package_group_name ?? null,
      service_name: primary?.service_name ?? null,
      package_description_html: primary?.description_html ?? null,
      add_on_names: joined(addOns.map((x) => x.attrs.name)),
      backdrop_names: joined(backdrops.map((x) => x.attrs.name)),
      design_statuses: '',
      due_at:
        startMs === null || a.status !== 'confirmed'
          ? null
          : zonedIso(startMs - 14 * 86_400_000, tz),
      customer_ids: joined(customers.map((c) => c.attrs.user_id)),
      customer_names: joined(customers.map((c) => c.attrs.name)),
      customer_emails: joined(customers.map((c) => c.attrs.email)),
      customer_phones: joined(customers.map((c) => c.attrs.phone)),
      customer_and_contact_ids: joined([
        ...customers.map((c) => c.attrs.user_id),
        ...contacts.map((c) => c.id),
      ]),
      customer_and_contact_names: joined([
        ...customers.map((c) => c.attrs.name),
        ...contacts.map((c) => c.attrs.name),
      ]),
      customer_and_contact_emails: joined([
        ...customers.map((c) => c.attrs.email),
        ...contacts.map((c) => c.attrs.email),
      ]),
      customer_and_contact_phones: joined([
        ...customers.map((c) => c.attrs.phone),
        ...contacts.map((c) => c.attrs.phone),
      ]),
      additional_contact_ids: joined(contacts.map((c) => c.id)),
      additional_contact_names: joined(contacts.map((c) => c.attrs.name)),
      additional_contact_emails: joined(contacts.map((c) => c.attrs.email)),
      additional_contact_phones: joined(contacts.map((c) => c.attrs.phone)),
      assigned_staff_ids: joined(staff.map((s) => s.id)),
      assigned_staff_names: joined(staff.map((s) => s.name)),
      assigned_staff_abbreviations: joined(staff.map((s) => abbreviation(s.name))),
      assigned_staff_emails: joined(staff.map((s) => s.email)),
      change_summary: null,
      brand_id: a.brand_id ?? event.businessId,
      brand_name: businessName(ctx, event.businessId),
      primary_image: { hero_variant: primary ? primary.preview_image : null },
      booked_at_description: bookedMs === null ? '' : `Booked on ${longDate(bookedMs, tz)}`,
      current_user_assigned: a.assigned_staff_ids.includes(viewer.userId),
      event_url: `${APP_ORIGIN}/events/${a.token}`,
      proposal_url: `${APP_ORIGIN}/proposals/${a.token}`,
      referred_by_user_id: referrer?.id ?? null,
      referred_by_user_name: referrer?.name ?? null,
      referred_by_user_email: referrer?.email ?? null,
    },
    {
      event_bookings: refList(
        'event_booking',
        bookings.map((b) => b.id),
      ),
      event_users: refList(
        'event_user',
        customers.map((c) => c.id),
      ),
      event_staff_members: refList(
        'event_staff_member',
        staffMembers.map((s) => s.id),
      ),
      event_staff_requests: refList('event_staff_request', []),
      contacts: refList(
        'contact',
        contacts.map((c) => c.id),
      ),
      notes: refList(
        'note',
        notes.map((n) => n.id),
      ),
    },
  );
}

export function eventBookingItem(
  ctx: SandboxContext,
  booking: StoredRecord<EventBookingAttrs>,
  event: StoredRecord<EventAttrs>,
  viewer: Viewer,
): Item {
  const b = booking.attrs;
  const e = event.attrs;
  const tz = businessTimeZone(ctx.db, booking.businessId);
  const startMs = Date.parse(b.starts_at);
  const endMs = Date.parse(b.ends_at);
  const addOns = ctx.records.children('event_add_on', booking.id);
  const backdrop = ctx.records.children('event_photobooth_background', booking.id)[0];
  const pricing = canSeeEventPricing(viewer, event);
  return item(
    'event_booking',
    {
      id: b.id,
      event_id: b.event_id,
      event_type_id: b.event_type_id,
      title: b.title,
      name: b.name,
      starts_at: zonedIso(startMs, tz),
      ends_at: zonedIso(endMs, tz),
      status: e.status,
      formatted_status: STATUS_LABEL[e.status],
      formatted_status_with_context: statusWithContext(e, tz),
      brand_name: businessName(ctx, booking.businessId),
      canceled: e.canceled,
      postponed: e.postponed,
      date_mode: b.date_mode,
      description_html: b.custom_description_html ?? b.description_html,
      override_ends_at: b.override_ends_at,
      length_in_minutes: b.length_in_minutes.toFixed(1),
      length_in_days: b.length_in_days ?? Math.floor(b.length_in_minutes / 1440),
      event_type_unit_range: null,
      units: b.units,
      ...formattedRanges(startMs, endMs, tz),
      formatted_units: b.units === null ? '' : `${b.units} ${b.units === 1 ? 'unit' : 'units'}`,
      staff_member_abbreviations: joined(staffOf(ctx, event).map((s) => abbreviation(s.name))),
      expired_proposal: expiredProposal(ctx, event),
      primary_image_attachment: { video_variant: b.preview_image },
      package_group_name: b.package_group_name,
      service_name: b.service_name,
      ...money(
        'override_price',
        pricing ? b.override_price_cents : null,
        businessCurrency(ctx, booking.businessId),
      ),
      taxable: b.taxable,
    },
    {
      event_add_ons: refList(
        'event_add_on',
        addOns.map((x) => x.id),
      ),
      event_photobooth_background: refOne('event_photobooth_background', backdrop?.id),
    },
  );
}

export function eventAutocompleteItem(ctx: SandboxContext, event: StoredRecord<EventAttrs>): Item {
  const a = event.attrs;
  const tz = businessTimeZone(ctx.db, event.businessId);
  const startMs = a.starts_at ? Date.parse(a.starts_at) : null;
  return item('event_autocomplete', {
    id: a.id,
    title: a.title,
    status: a.status,
    formatted_status: STATUS_LABEL[a.status],
    booked_at: iso(ctx, event.businessId, a.booked_at),
    starts_at: iso(ctx, event.businessId, a.starts_at),
    ends_at: iso(ctx, event.businessId, a.ends_at),
    starts_at_date: startMs === null ? null : mdy(startMs, tz),
    starts_at_time: startMs === null ? null : time12(startMs, tz),
    preview_images: eventBookings(ctx, event.id).map((b) => ({
      event_type_variant: b.attrs.preview_image,
    })),
  });
}

/* ------------------------------------------------------------------ creation */

interface BookingPlan {
  pkg: StoredRecord<PackageAttrs>;
  startMs: number;
  endMs: number;
  overrideEnds: boolean;
  lengthInDays: number | null;
  units: number | null;
  backdrop: { id: number; name: string } | null;
  addOns: PlannedAddOn[];
  /** Staff the booking carries (a converted lead's requested staff member). */
  staffId: number | null;
  customTitle: string | null;
  customDescription: string | null;
}

interface PlannedAddOn {
  id: number;
  name: string;
  quantity: number;
  /** Unit price for a booking of this many minutes. */
  priceCents: (minutes: number) => number;
}

function plannedAddOn(addOn: StoredRecord<AddOnAttrs>): PlannedAddOn {
  return {
    id: addOn.id,
    name: addOn.attrs.name,
    quantity: 1,
    priceCents: (minutes) => addOnPriceCents(addOn.attrs, minutes),
  };
}

function packagePriceCents(
  pkg: PackageAttrs,
  minutes: number,
  days: number,
  units: number,
): number {
  switch (pkg.price_method) {
    case 'hourly':
      return Math.round((pkg.price_cents * minutes) / 60);
    case 'daily':
      return pkg.price_cents * days;
    case 'units':
      return pkg.price_cents * units;
    default:
      return pkg.price_cents;
  }
}

function addOnPriceCents(addOn: AddOnAttrs, minutes: number): number {
  if (addOn.price_method === 'hourly') return Math.round((addOn.hourly_price_cents * minutes) / 60);
  if (addOn.price_method === 'daily') {
    return addOn.daily_price_cents * Math.max(1, Math.ceil(minutes / 1440));
  }
  return addOn.price_cents;
}

/** The entries of quick_event_bookings_attributes in index order (an array is accepted too). */
function bookingEntries(raw: unknown): [string, unknown][] | undefined {
  if (Array.isArray(raw)) return raw.map((v, i) => [String(i), v]);
  if (typeof raw !== 'object' || raw === null) return undefined;
  return Object.entries(raw as Record<string, unknown>).sort(
    ([a], [b]) => Number(a) - Number(b) || a.localeCompare(b),
  );
}

function planBooking(
  ctx: SandboxContext,
  businessId: number,
  index: string,
  raw: unknown,
  problems: FieldErrors,
): BookingPlan | undefined {
  const prefix = `quick_event_bookings_attributes.${index}.`;
  const entryLabel = `Quick event booking ${index}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.add(`quick_event_bookings_attributes.${index}`, 'must be an object', entryLabel);
    return undefined;
  }
  const body = raw as Record<string, unknown>;
  const f = reader(body, problems, prefix, entryLabel);
  const tz = businessTimeZone(ctx.db, businessId);
  const before = problems.count;

  let pkg: StoredRecord<PackageAttrs> | undefined;
  const packageId = f.int('event_type_id');
  if (blank(body.event_type_id)) f.fail('event_type_id', "can't be blank");
  else if (packageId !== undefined) {
    pkg = getPackage(ctx.records, businessId, packageId);
    if (!pkg) f.fail('event_type_id', 'must exist');
  }

  let date: DateParts | undefined;
  if (blank(body.starts_at_date)) f.fail('starts_at_date', "can't be blank");
  else {
    date = parseMdy(body.starts_at_date) ?? parseYmd(body.starts_at_date);
    if (!date) f.fail('starts_at_date', 'is not a valid date (use MM-DD-YYYY)');
  }
  let startMinutes = 0;
  if (!blank(body.starts_at_time)) {
    const t = parseTime12(body.starts_at_time);
    if (t === undefined) f.fail('starts_at_time', 'is not a valid time (use h:mm AM/PM)');
    else startMinutes = t;
  }
  let endMinutes: number | undefined;
  if (!blank(body.ends_at_time)) {
    endMinutes = parseTime12(body.ends_at_time);
    if (endMinutes === undefined) f.fail('ends_at_time', 'is not a valid time (use h:mm AM/PM)');
  }
  const lengthInMinutes = f.decimal('length_in_minutes');
  if (lengthInMinutes !== undefined && lengthInMinutes <= 0) {
    f.fail('length_in_minutes', 'must be greater than 0');
  }
  const lengthInDays = f.int('length_in_days');
  const units = f.int('units');

  let backdrop: { id: number; name: string } | null = null;
  const backdropId = f.int('backdrop_id');
  if (backdropId !== undefined) {
    const found = getBackdrop(ctx.records, businessId, backdropId);
    if (found) backdrop = { id: found.id, name: found.attrs.name };
    else f.fail('backdrop_id', 'must exist');
  }

  const addOns: PlannedAddOn[] = [];
  const rawAddOns = body.add_on_ids;
  if (!blank(rawAddOns)) {
    const list = Array.isArray(rawAddOns) ? (rawAddOns as unknown[]) : [rawAddOns];
    for (const v of list) {
      const id =
        typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,15}$/.test(v) ? +v : NaN;
      if (!Number.isSafeInteger(id)) {
        f.fail('add_on_ids', 'must be a list of integers');
        break;
      }
      const addOn = getAddOn(ctx, businessId, id);
      if (!addOn) f.fail('add_on_ids', `contains an unknown add-on (${id})`);
      else addOns.push(plannedAddOn(addOn));
    }
  }

  const customTitle = f.str('one_off_custom_title');
  const customDescription = f.str('custom_description_html');
  if (pkg && !pkg.attrs.custom) {
    if (customTitle !== null)
      f.fail('one_off_custom_title', 'is only allowed for a custom package');
    if (customDescription !== null) {
      f.fail('custom_description_html', 'is only allowed for a custom package');
    }
  }
  if (problems.count > before || !pkg || !date) return undefined;

  const startMs = fromZoned(date, startMinutes, tz);
  const p = pkg.attrs;
  let endMs: number;
  let days: number | null = null;
  if (endMinutes !== undefined) {
    endMs = fromZoned(date, endMinutes, tz);
    // An end time at or before the start means the booking runs past midnight.
    if (endMs <= startMs) endMs = fromZoned(date, endMinutes + 1440, tz);
  } else if (p.price_method === 'daily') {
    days = lengthInDays ?? Math.max(1, Math.round(p.default_length_in_minutes / 1440));
    endMs = startMs + days * 86_400_000;
  } else {
    endMs = startMs + (lengthInMinutes ?? p.default_length_in_minutes) * 60_000;
  }
  return {
    pkg,
    startMs,
    endMs,
    overrideEnds: endMinutes !== undefined,
    lengthInDays:
      p.price_method === 'daily'
        ? (days ?? Math.max(1, Math.ceil((endMs - startMs) / 86_400_000)))
        : null,
    units: p.price_method === 'units' ? (units ?? 1) : null,
    backdrop,
    addOns,
    staffId: null,
    customTitle,
    customDescription,
  };
}

/**
 * A lead's own bookings (records of type 'lead_booking' under the lead), used when no entries
 * are sent: package, times, units, backdrop, add-ons (at the price they were quoted) and the
 * requested staff member carry over. Bookings without a package or a start are skipped.
 */
function plansFromLead(ctx: SandboxContext, businessId: number, leadId: number): BookingPlan[] {
  const plans: BookingPlan[] = [];
  for (const r of ctx.records.children('lead_booking', leadId)) {
    const a = r.attrs;
    const pkg =
      typeof a.event_type_id === 'number'
        ? getPackage(ctx.records, businessId, a.event_type_id)
        : undefined;
    const startMs = typeof a.starts_at === 'string' ? Date.parse(a.starts_at) : NaN;
    if (!pkg || !Number.isFinite(startMs)) continue;
    const parsedEnd = typeof a.ends_at === 'string' ? Date.parse(a.ends_at) : NaN;
    const endMs =
      Number.isFinite(parsedEnd) && parsedEnd > startMs
        ? parsedEnd
        : startMs + pkg.attrs.default_length_in_minutes * 60_000;
    const backdrop =
      typeof a.photobooth_background_id === 'number'
        ? getBackdrop(ctx.records, businessId, a.photobooth_background_id)
        : undefined;
    const addOns = ctx.records.children('lead_add_on', r.id).flatMap((x): PlannedAddOn[] => {
      const { add_on_id, name, quantity, price_cents } = x.attrs;
      if (typeof add_on_id !== 'number') return [];
      const cents = typeof price_cents === 'number' ? price_cents : 0;
      return [
        {
          id: add_on_id,
          name: typeof name === 'string' ? name : '',
          quantity: typeof quantity === 'number' && quantity > 0 ? quantity : 1,
          priceCents: () => cents,
        },
      ];
    });
    plans.push({
      pkg,
      startMs,
      endMs,
      overrideEnds: false,
      lengthInDays:
        pkg.attrs.price_method === 'daily'
          ? Math.max(1, Math.ceil((endMs - startMs) / 86_400_000))
          : null,
      units:
        pkg.attrs.price_method === 'units' ? (typeof a.units === 'number' ? a.units : 1) : null,
      backdrop: backdrop ? { id: backdrop.id, name: backdrop.attrs.name } : null,
      addOns,
      staffId: typeof a.staff_id === 'number' ? a.staff_id : null,
      customTitle: null,
      customDescription: null,
    });
  }
  return plans;
}

function findCustomerByEmail(ctx: SandboxContext, businessId: number, email: string) {
  return ctx.db
    .prepare(
      "SELECT id, name, email, role FROM users WHERE business_id = ? AND role = 'customer' AND lower(email) = lower(?) ORDER BY id LIMIT 1",
    )
    .get(businessId, email) as UserInfo | undefined;
}

const stringOr = (v: unknown): string | null =>
  typeof v === 'string' && v.trim() !== '' ? v : null;

export interface CreateEventOptions {
  /** ISO time the event was made (and booked, when confirmed); default now. */
  createdAt?: string;
  /** Overrides the status that is_proposal / proposal_date_reserved would give. */
  status?: EventStatus;
  createdVia?: string;
  /** The event's token (its URLs); default random. The seed passes a seeded one. */
  token?: string;
}

/**
 * Creates an event from a POST /api/v1/events body (validated the same way; throws the 422).
 * Used by the route, the seed generator and the admin API.
 */
export function createEvent(
  ctx: SandboxContext,
  businessId: number,
  input: Record<string, unknown>,
  options: CreateEventOptions = {},
): StoredRecord<EventAttrs> {
  const body = input;
  const problems = new FieldErrors();
  const f = reader(body, problems);

  const isProposal = f.bool('is_proposal') ?? false;
  const dateReserved = f.bool('proposal_date_reserved') ?? false;
  const status: EventStatus =
    options.status ??
    (isProposal ? (dateReserved ? 'proposal_date_reserved' : 'proposal') : 'confirmed');
  const confirmed = status === 'confirmed';

  let contactType: ContactType = 'None';
  if (blank(body.contact_type)) f.fail('contact_type', "can't be blank");
  else if (!(CONTACT_TYPES as readonly unknown[]).includes(body.contact_type)) {
    f.fail('contact_type', `is not included in the list (${CONTACT_TYPES.join(', ')})`);
  } else contactType = body.contact_type as ContactType;

  let lead: StoredRecord | undefined;
  const leadId = f.int('lead_id');
  if (leadId !== undefined) {
    lead = ctx.records.get('lead', businessId, leadId);
    if (!lead) f.fail('lead_id', 'must exist');
    else if (lead.attrs.converted_to_event === true) {
      f.fail('lead_id', 'has already been converted to an event');
    }
  }
  const l = lead?.attrs ?? {};
  const leadName = [stringOr(l.first_name), stringOr(l.last_name)].filter(Boolean).join(' ');

  const contact = {
    name: f.str('contact_name') ?? (leadName || null),
    email: f.str('contact_email') ?? stringOr(l.email),
    phone: f.str('contact_phone') ?? stringOr(l.phone),
    company_name: f.str('contact_company_name') ?? stringOr(l.company_name),
    description: f.str('contact_description'),
    street: f.str('contact_street'),
    city: f.str('contact_city'),
    state_code: f.str('contact_state_code'),
    postal_code: f.str('contact_postal_code'),
  };
  let existingCustomer: UserInfo | undefined;
  if (contactType === 'New Customer') {
    if (!contact.name) f.fail('contact_name', "can't be blank");
    if (!contact.email) f.fail('contact_email', "can't be blank");
    else if (!isEmail(contact.email)) f.fail('contact_email', 'is invalid');
  }
  const customerUserId = f.int('customer_user_id');
  if (contactType === 'Existing Customer') {
    if (blank(body.customer_user_id)) f.fail('customer_user_id', "can't be blank");
    else if (customerUserId !== undefined) {
      existingCustomer = userOf(ctx, businessId, customerUserId);
      if (!existingCustomer) f.fail('customer_user_id', 'must exist');
    }
  }

  const signature = f.bool('signature_collected') ?? false;
  if (signature && !confirmed)
    f.fail('signature_collected', 'is only available for a confirmed booking');
  const invite = f.bool('send_contact_invitation_to_create_account') ?? false;
  if (invite && !(confirmed && contactType === 'New Customer')) {
    f.fail(
      'send_contact_invitation_to_create_account',
      'is only available for a confirmed booking with a new customer',
    );
  }
  const confirmationEmails = f.bool('send_booking_confirmation_emails') ?? false;
  if (confirmationEmails && !confirmed) {
    f.fail('send_booking_confirmation_emails', 'is only available for a confirmed booking');
  }

  const totalCents = f.cents('total_amount');
  const paidCents = f.cents('paid_amount');
  const depositCents = f.cents('custom_deposit_amount');
  const latitude = f.decimal('venue_latitude');
  if (latitude !== undefined && Math.abs(latitude) > 90)
    f.fail('venue_latitude', 'must be between -90 and 90');
  const longitude = f.decimal('venue_longitude');
  if (longitude !== undefined && Math.abs(longitude) > 180) {
    f.fail('venue_longitude', 'must be between -180 and 180');
  }
  let validThrough: string | null = null;
  if (!blank(body.proposal_valid_through)) {
    const d = parseYmd(body.proposal_valid_through) ?? parseMdy(body.proposal_valid_through);
    if (!d) f.fail('proposal_valid_through', 'is not a valid date (use YYYY-MM-DD)');
    else
      validThrough = `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;
  }
  const addTax = f.bool('add_tax') ?? false;
  const addTravel = f.bool('add_travel') ?? false;
  const brandId = f.int('brand_id');
  const customTitle = f.str('custom_title');
  const venue = {
    venue_name: f.str('venue_name') ?? stringOr(l.venue_name),
    venue_address: f.str('venue_address') ?? stringOr(l.venue_address),
    venue_city: f.str('venue_city') ?? stringOr(l.venue_city),
    venue_state: f.str('venue_state') ?? stringOr(l.venue_state),
    venue_zip: f.str('venue_zip') ?? stringOr(l.venue_zip),
    venue_place_id: f.str('venue_place_id') ?? stringOr(l.venue_place_id),
  };
  const publicNotes = f.str('public_notes');
  const privateNotes = f.str('private_notes');

  const plans: BookingPlan[] = [];
  const rawEntries = body.quick_event_bookings_attributes;
  if (!blank(rawEntries)) {
    const entries = bookingEntries(rawEntries);
    if (!entries) {
      f.fail('quick_event_bookings_attributes', 'must be an object keyed by index ("0", "1", ...)');
    } else {
      for (const [index, entry] of entries) {
        const plan = planBooking(ctx, businessId, index, entry, problems);
        if (plan) plans.push(plan);
      }
      if (entries.length === 0) f.fail('quick_event_bookings_attributes', "can't be blank");
    }
  } else if (lead) {
    plans.push(...plansFromLead(ctx, businessId, lead.id));
    if (plans.length === 0) {
      f.fail(
        'quick_event_bookings_attributes',
        "can't be blank (the lead has no bookings to copy)",
      );
    }
  } else {
    f.fail('quick_event_bookings_attributes', "can't be blank");
  }
  problems.throwIfAny();

  // Customers: a new one becomes a user of the business with the customer role.
  let customer: (UserInfo & { phone: string | null }) | undefined;
  if (contactType === 'New Customer' && contact.email && contact.name) {
    const found = findCustomerByEmail(ctx, businessId, contact.email);
    const user =
      found ??
      new Identity(ctx.db, ctx.clock).createUser({
        businessId,
        name: contact.name,
        email: contact.email,
        role: 'customer',
        permissions: [],
      });
    customer = {
      id: user.id,
      name: user.name,
      email: user.email,
      role: user.role,
      phone: contact.phone,
    };
  } else if (contactType === 'Existing Customer' && existingCustomer) {
    customer = { ...existingCustomer, phone: null };
  }

  plans.sort((a, b) => a.startMs - b.startMs);
  // A converted lead's requested staff member carries over to the event.
  const staffIds = [
    ...new Set(
      [typeof l.staff_id === 'number' ? l.staff_id : null, ...plans.map((p) => p.staffId)].filter(
        (id): id is number => id !== null && userOf(ctx, businessId, id) !== undefined,
      ),
    ),
  ];
  const first = plans[0];
  const startMs = Math.min(...plans.map((p) => p.startMs));
  const endMs = Math.max(...plans.map((p) => p.endMs));
  const createdAt = options.createdAt ?? ctx.clock.iso();
  const displayName = customer?.name ?? contact.name;
  const packageTitle = first?.customTitle ?? first?.pkg.attrs.name ?? 'Event';
  const title = customTitle ?? (displayName ? `${displayName} - ${packageTitle}` : packageTitle);
  const text = (v: unknown): string | null => stringOr(v);

  const event = ctx.records.insert<EventAttrs>('event', businessId, (id) => ({
    id,
    title,
    custom_title: customTitle,
    status,
    booked_at: confirmed ? createdAt : null,
    created_at: createdAt,
    created_via: options.createdVia ?? 'api',
    ...venue,
    latitude: latitude ?? (typeof l.venue_latitude === 'number' ? l.venue_latitude : null),
    longitude: longitude ?? (typeof l.venue_longitude === 'number' ? l.venue_longitude : null),
    public_notes: publicNotes,
    private_notes: privateNotes,
    completed: false,
    canceled: false,
    postponed: false,
    signature_collected: signature,
    add_tax: addTax,
    add_travel: addTravel,
    tax_rate: DEFAULT_TAX_RATE,
    total_amount_cents: totalCents ?? null,
    paid_amount_cents: paidCents ?? null,
    custom_deposit_amount_cents: depositCents ?? null,
    proposal_valid_through: validThrough,
    contact_type: contactType,
    assigned_staff_ids: staffIds,
    lead_id: lead?.id ?? null,
    brand_id: brandId ?? null,
    source: lead ? (text(l.source) ?? text(l.origin) ?? 'Lead') : 'API',
    estimated_number_guests:
      typeof l.estimated_number_guests === 'number' ? l.estimated_number_guests : null,
    indoor_outdoor: text(l.indoor_outdoor),
    lead_event_type: text(l.lead_event_type),
    contact_preference: text(l.contact_preference),
    utm_source: text(l.utm_source),
    utm_campaign: text(l.utm_campaign),
    utm_medium: text(l.utm_medium),
    utm_term: text(l.utm_term),
    utm_content: text(l.utm_content),
    ad_click_id: text(l.ad_click_id),
    referred_by_user_id: typeof l.referred_by_user_id === 'number' ? l.referred_by_user_id : null,
    token: options.token ?? randomBytes(12).toString('hex'),
    invoice_number: String(1000 + id),
    starts_at: new Date(startMs).toISOString(),
    ends_at: new Date(endMs).toISOString(),
    invitation_sent_at: invite ? createdAt : null,
    confirmation_emails_sent_at: confirmationEmails ? createdAt : null,
  }));

  for (const plan of plans) {
    const p = plan.pkg.attrs;
    const minutes = Math.round((plan.endMs - plan.startMs) / 60_000);
    const days = plan.lengthInDays ?? Math.max(1, Math.ceil(minutes / 1440));
    const booking = ctx.records.insert<EventBookingAttrs>(
      'event_booking',
      businessId,
      (id) => ({
        id,
        event_id: event.id,
        event_type_id: plan.pkg.id,
        name: p.name,
        title: plan.customTitle ?? p.name,
        package_group_name: p.package_group_name,
        service_name: p.service_name,
        description_html: p.description_html,
        preview_image: p.preview_image,
        starts_at: new Date(plan.startMs).toISOString(),
        ends_at: new Date(plan.endMs).toISOString(),
        override_ends_at: plan.overrideEnds,
        date_mode: 'date_time',
        length_in_minutes: minutes,
        length_in_days: plan.lengthInDays,
        units: plan.units,
        price_method: p.price_method,
        price_cents: packagePriceCents(p, minutes, days, plan.units ?? 1),
        override_price_cents: null,
        taxable: true,
        backdrop_id: plan.backdrop?.id ?? null,
        add_on_ids: plan.addOns.map((a) => a.id),
        one_off_custom_title: plan.customTitle,
        custom_description_html: plan.customDescription,
      }),
      { parentId: event.id },
    );
    for (const addOn of plan.addOns) {
      ctx.records.insert<EventAddOnAttrs>(
        'event_add_on',
        businessId,
        (id) => ({
          id,
          event_booking_id: booking.id,
          add_on_id: addOn.id,
          name: addOn.name,
          quantity: addOn.quantity,
          price_cents: addOn.priceCents(minutes),
        }),
        { parentId: booking.id },
      );
    }
    if (plan.backdrop) {
      const backdrop = plan.backdrop;
      ctx.records.insert(
        'event_photobooth_background',
        businessId,
        (id) => ({
          id,
          event_booking_id: booking.id,
          photobooth_background_id: backdrop.id,
          name: backdrop.name,
        }),
        { parentId: booking.id },
      );
    }
  }

  if (customer) {
    const c = customer;
    ctx.records.insert<EventUserAttrs>(
      'event_user',
      businessId,
      (id) => ({
        id,
        event_id: event.id,
        user_id: c.id,
        name: c.name,
        email: c.email,
        phone: c.phone,
      }),
      { parentId: event.id },
    );
  } else if (contactType === 'None' && (contact.name || contact.email || contact.phone)) {
    // Without a customer the contact details are kept as an additional contact.
    ctx.records.insert<ContactAttrs>(
      'contact',
      businessId,
      (id) => ({ id, event_id: event.id, ...contact }),
      { parentId: event.id },
    );
  }

  for (const userId of staffIds) {
    ctx.records.insert(
      'event_staff_member',
      businessId,
      (id) => ({ id, event_id: event.id, user_id: userId }),
      { parentId: event.id },
    );
  }
  if (lead) ctx.records.update(lead, { converted_to_event: true });
  return getEvent(ctx, businessId, event.id) ?? event;
}

export type EventPatch = Partial<
  Pick<
    EventAttrs,
    | 'title'
    | 'status'
    | 'canceled'
    | 'completed'
    | 'postponed'
    | 'assigned_staff_ids'
    | 'public_notes'
    | 'private_notes'
    | 'paid_amount_cents'
    | 'total_amount_cents'
    | 'custom_deposit_amount_cents'
    | 'proposal_valid_through'
  >
>;

/**
 * A staff-style edit from the business's own screens (the API has no event update): flags,
 * status, staff assignment, notes, amounts. Confirming a proposal sets booked_at.
 */
export function updateEvent(
  ctx: SandboxContext,
  record: StoredRecord<EventAttrs>,
  patch: EventPatch,
): StoredRecord<EventAttrs> {
  const full: Partial<EventAttrs> = { ...patch };
  if (
    patch.status === 'confirmed' &&
    record.attrs.status !== 'confirmed' &&
    !record.attrs.booked_at
  ) {
    full.booked_at = ctx.clock.iso();
  }
  if (patch.status !== undefined && patch.status !== 'confirmed') full.booked_at = null;
  if (patch.assigned_staff_ids) {
    const wanted = [...new Set(patch.assigned_staff_ids)];
    full.assigned_staff_ids = wanted;
    const existing = ctx.records.children<{ id: number; user_id: number }>(
      'event_staff_member',
      record.id,
    );
    for (const member of existing) {
      if (!wanted.includes(member.attrs.user_id)) ctx.records.softDelete(member, ctx.clock.iso());
    }
    for (const userId of wanted) {
      if (existing.some((m) => m.attrs.user_id === userId)) continue;
      ctx.records.insert(
        'event_staff_member',
        record.businessId,
        (id) => ({ id, event_id: record.id, user_id: userId }),
        { parentId: record.id },
      );
    }
  }
  return ctx.records.update(record, full);
}

/* ------------------------------------------------------------------ routes */

function dateParam(query: Record<string, unknown>, name: string): DateParts | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  const parsed = parseYmd(raw);
  if (!parsed) {
    throw badRequest(
      'invalid_parameter',
      `${name} must be a date as YYYY-MM-DD, got '${(typeof raw === 'string' ? raw : JSON.stringify(raw)).slice(0, 40)}'`,
    );
  }
  return parsed;
}

function visibleBooking(
  ctx: SandboxContext,
  caller: Caller,
  id: string | undefined,
): { booking: StoredRecord<EventBookingAttrs>; event: StoredRecord<EventAttrs> } {
  const booking = ctx.records.get<EventBookingAttrs>(
    'event_booking',
    caller.businessId,
    Number(id),
  );
  const event = booking ? getEvent(ctx, caller.businessId, booking.attrs.event_id) : undefined;
  if (!booking || !event || !canSeeEvent(caller, event)) throw notFound('Event booking', id ?? '');
  return { booking, event };
}

export function eventsHandlers(): Handlers {
  return {
    'events.get': ({ ctx, caller, params }) =>
      single(eventItem(ctx, findVisibleEvent(ctx, caller, params.event_id), caller)),

    'events.create': ({ ctx, caller, body }) => {
      const event = createEvent(ctx, caller.businessId, body as Record<string, unknown>);
      return single(eventAutocompleteItem(ctx, event));
    },

    'eventBookings.get': ({ ctx, caller, params }) => {
      const { booking, event } = visibleBooking(ctx, caller, params.event_booking_id);
      return single(eventBookingItem(ctx, booking, event, caller));
    },

    'eventBookings.list': ({ ctx, caller, query }) => {
      const tz = businessTimeZone(ctx.db, caller.businessId);
      const start = dateParam(query, 'event_date_start');
      const end = dateParam(query, 'event_date_end');
      const conditions = [
        `parent_id IN (SELECT e.id FROM records e WHERE e.type = 'event' AND e.business_id = ? AND e.deleted_at IS NULL${
          caller.permissions.has('unassigned_event_read')
            ? ''
            : " AND EXISTS (SELECT 1 FROM json_each(e.attrs, '$.assigned_staff_ids') s WHERE s.value = ?)"
        })`,
      ];
      const params: unknown[] = [caller.businessId];
      if (!caller.permissions.has('unassigned_event_read')) params.push(caller.userId);
      if (start) {
        conditions.push("json_extract(attrs, '$.starts_at') >= ?");
        params.push(new Date(fromZoned(start, 0, tz)).toISOString());
      }
      if (end) {
        if (start && ymdOf(end) < ymdOf(start)) {
          throw badRequest(
            'invalid_parameter',
            'event_date_end must not be before event_date_start',
          );
        }
        conditions.push("json_extract(attrs, '$.starts_at') < ?");
        params.push(new Date(fromZoned(addDays(end, 1), 0, tz)).toISOString());
      }
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<EventBookingAttrs>(
        ctx,
        p,
        'event_booking',
        caller.businessId,
        {
          where: conditions.join(' AND '),
          params,
          orderBy: "json_extract(attrs, '$.starts_at'), id",
        },
      );
      const events = new Map<number, StoredRecord<EventAttrs>>();
      const data: Item[] = [];
      for (const booking of records) {
        let event = events.get(booking.attrs.event_id);
        if (!event) {
          event = getEvent(ctx, caller.businessId, booking.attrs.event_id);
          if (!event) continue;
          events.set(event.id, event);
        }
        data.push(eventBookingItem(ctx, booking, event, caller));
      }
      return listBody(data, total, p);
    },
  };
}

function ymdOf(d: DateParts): string {
  return `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;
}
