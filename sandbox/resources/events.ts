import { randomBytes } from 'node:crypto';
import type { StoredRecord } from '../db.js';
import type { SandboxContext } from '../context.js';
import { isEmail } from '../body-fields.js';
import { FieldErrors } from '../errors.js';
import { Identity } from '../identity.js';
import { dateForm, parseMdy, parseYmd } from '../time.js';
import {
  type EventStatus,
  CONTACT_TYPES,
  type ContactType,
  type EventAttrs,
  type EventBookingAttrs,
  type EventAddOnAttrs,
  DEFAULT_TAX_RATE,
  getEvent,
  type EventUserAttrs,
  type ContactAttrs,
  type UserInfo,
  userOf,
  type BookingPlan,
  packagePriceCents,
} from './events-model.js';
import { blank, reader, bookingEntries, planBooking, plansFromLead } from './events-input.js';

/**
 * Making and changing events (record shapes in events-model.ts, body reading in
 * events-input.ts, answers in events-view.ts, routes in events-routes.ts).
 */

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
    if (!d) f.fail('proposal_valid_through', `is not ${dateForm('YYYY-MM-DD')}`);
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
