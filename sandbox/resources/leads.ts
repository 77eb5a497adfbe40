import { randomBytes } from 'node:crypto';
import type { SandboxContext } from '../context.js';
import type { StoredRecord } from '../db.js';
import { businessTimeZone, zonedIso } from '../time.js';
import { mergeAnswers } from './lead-questions.js';
import { addLeadBooking } from './lead-bookings.js';
import { ensureLeadIndexes } from './lead-index.js';
import type { LeadBookingInput } from './lead-bookings-model.js';
import {
  type AnswerValue,
  type LeadAttrs,
  type LeadInput,
  type CreateLeadOptions,
  defaultBrand,
  normalizePhone,
} from './leads-model.js';

/**
 * Making and changing leads (record shapes in leads-model.ts; body reading in
 * leads-input.ts, answers in leads-view.ts, routes in leads-routes.ts).
 */

function randomLeadToken(): string {
  return randomBytes(12).toString('hex');
}

function createdAtIso(option: number | string | undefined, now: number, timeZone: string): string {
  const ms = option === undefined ? now : typeof option === 'number' ? option : Date.parse(option);
  return zonedIso(Number.isNaN(ms) ? now : ms, timeZone);
}

/**
 * The stored attributes of a new lead: pure, so createLead and the seed generator's bulk path
 * write the same shape. `stamp` carries what createLead looks up or draws (token, zoned
 * created_at, brand).
 */
const v = <T>(value: T | null | undefined): T | null => value ?? null;

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
