import type { Caller } from '../auth.js';
import type { StoredRecord } from '../db.js';
import type { SandboxContext } from '../context.js';
import { notFound } from '../errors.js';
import { findUser } from '../identity.js';
import type { AddOnAttrs } from './add-ons.js';
import type { PackageAttrs } from './offerings.js';

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

export interface EventUserAttrs extends Record<string, unknown> {
  id: number;
  event_id: number;
  user_id: number;
  name: string;
  email: string;
  phone: string | null;
}

export interface ContactAttrs extends Record<string, unknown> {
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
export const DEPOSIT_SHARE = 0.25;
export const APP_ORIGIN = 'https://app.sandbox.invalid';

export const STATUS_LABEL: Record<EventStatus, string> = {
  confirmed: 'Confirmed',
  proposal_date_reserved: 'Proposal (Date Reserved)',
  proposal: 'Proposal',
};

export interface UserInfo {
  id: number;
  name: string;
  email: string;
  role: string;
}

export function userOf(ctx: SandboxContext, businessId: number, id: number): UserInfo | undefined {
  return findUser(ctx.db, businessId, id);
}

export function businessName(ctx: SandboxContext, businessId: number): string {
  const row = ctx.db.prepare('SELECT name FROM businesses WHERE id = ?').get(businessId) as
    { name: string } | undefined;
  return row?.name ?? '';
}

export function abbreviation(name: string): string {
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

export interface BookingPlan {
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

export interface PlannedAddOn {
  id: number;
  name: string;
  quantity: number;
  /** Unit price for a booking of this many minutes. */
  priceCents: (minutes: number) => number;
}

export function plannedAddOn(addOn: StoredRecord<AddOnAttrs>): PlannedAddOn {
  return {
    id: addOn.id,
    name: addOn.attrs.name,
    quantity: 1,
    priceCents: (minutes) => addOnPriceCents(addOn.attrs, minutes),
  };
}

export function packagePriceCents(
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
