import type { StoredRecord } from '../db.js';
import type { SandboxContext } from '../context.js';
import { item, money, refList, refOne, type Item } from '../envelope.js';
import {
  businessTimeZone,
  formattedRanges,
  longDate,
  mdy,
  time12,
  ymd,
  zonedIso,
} from '../time.js';
import { businessCurrency } from './add-ons.js';
import {
  type EventAttrs,
  type EventBookingAttrs,
  type EventAddOnAttrs,
  eventBookings,
  canSeeEventPricing,
  type EventUserAttrs,
  type ContactAttrs,
  DEPOSIT_SHARE,
  APP_ORIGIN,
  STATUS_LABEL,
  type UserInfo,
  userOf,
  businessName,
  abbreviation,
} from './events-model.js';

/** Events, event bookings and the autocomplete item as the API answers them. */

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
