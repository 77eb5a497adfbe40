import type { SandboxContext } from '../context.js';
import type { StoredRecord } from '../db.js';
import {
  businessTimeZone,
  fromZoned,
  parseTime12,
  parseYmd,
  zonedIso,
  type DateParts,
} from '../time.js';
import type { LeadAttrs } from './leads-model.js';
import { getPackage } from './offerings.js';
import {
  type LeadBookingAttrs,
  type LeadBookingInput,
  DEFAULT_PREVIEW_IMAGE,
  staffMember,
} from './lead-bookings-model.js';

/**
 * Making and changing lead bookings (record shapes in lead-bookings-model.ts, body reading in
 * lead-bookings-input.ts, answers in lead-bookings-view.ts, routes in lead-bookings-routes.ts).
 */

export function nameOf(ctx: SandboxContext, type: string, businessId: number, id: number | null) {
  if (id === null) return null;
  const record = ctx.records.get(type, businessId, id);
  return typeof record?.attrs.name === 'string' ? record.attrs.name : null;
}

/** starts_at/ends_at from the requested date, time and length, in the business time zone. */
function schedule(
  attrs: LeadBookingAttrs,
  timeZone: string,
): Pick<LeadBookingAttrs, 'starts_at' | 'ends_at'> {
  return scheduleOf(parseYmd(attrs.starts_at_date), attrs, timeZone);
}

/** schedule() for a date already parsed (the seed generator has one). */
export function scheduleOf(
  date: DateParts | undefined | null,
  attrs: Pick<LeadBookingAttrs, 'starts_at_minutes' | 'length_in_minutes' | 'length_in_days'>,
  timeZone: string,
): Pick<LeadBookingAttrs, 'starts_at' | 'ends_at'> {
  if (!date) return { starts_at: null, ends_at: null };
  const startMs = fromZoned(date, attrs.starts_at_minutes ?? 0, timeZone);
  const minutes =
    attrs.length_in_minutes ?? (attrs.length_in_days !== null ? attrs.length_in_days * 1440 : null);
  return {
    starts_at: zonedIso(startMs, timeZone),
    ends_at: minutes === null ? null : zonedIso(startMs + minutes * 60_000, timeZone),
  };
}

/** Applies the sent fields to a booking and recomputes what depends on them. */
function resolveBooking(
  ctx: SandboxContext,
  businessId: number,
  current: LeadBookingAttrs,
  input: LeadBookingInput,
  creating: boolean,
): LeadBookingAttrs {
  const next: LeadBookingAttrs = { ...current };
  const has = (key: keyof LeadBookingInput) => Object.hasOwn(input, key);
  for (const key of [
    'event_type_id',
    'event_category_id',
    'package_group_id',
    'starts_at_date',
    'length_in_minutes',
    'length_in_days',
    'units',
    'package_unit_range_id',
    'staff_id',
  ] as const) {
    if (has(key)) (next as Record<string, unknown>)[key] = input[key] ?? null;
  }
  if (has('starts_at_time')) {
    next.starts_at_minutes =
      input.starts_at_time === null ? null : (parseTime12(input.starts_at_time) ?? null);
  }
  if (has('event_type_id')) {
    const pkg =
      next.event_type_id === null
        ? undefined
        : getPackage(ctx.records, businessId, next.event_type_id);
    next.name = pkg?.attrs.name ?? null;
    next.preview_image = pkg?.attrs.preview_image ?? DEFAULT_PREVIEW_IMAGE;
    if (pkg) {
      // A package belongs to one group and service; they follow it unless sent too.
      if (!has('event_category_id')) next.event_category_id = pkg.attrs.service_id;
      if (!has('package_group_id')) next.package_group_id = pkg.attrs.package_group_id;
      if (creating && !has('length_in_minutes') && !has('length_in_days')) {
        next.length_in_minutes = pkg.attrs.default_length_in_minutes;
      }
    }
  }
  if (has('event_type_id') || has('event_category_id')) {
    next.service_name = nameOf(ctx, 'service', businessId, next.event_category_id);
  }
  if (has('event_type_id') || has('package_group_id')) {
    next.package_group_name = nameOf(ctx, 'package_group', businessId, next.package_group_id);
  }
  if (has('staff_id')) {
    next.staff_name =
      next.staff_id === null ? null : (staffMember(ctx, businessId, next.staff_id)?.name ?? null);
  }
  return { ...next, ...schedule(next, businessTimeZone(ctx.db, businessId)) };
}

/**
 * Adds a booking to a lead. Callers validate the input first (readLeadBookingInput does for
 * HTTP); the package's default length applies when no length is given.
 */
export function addLeadBooking(
  ctx: SandboxContext,
  lead: StoredRecord<LeadAttrs>,
  input: LeadBookingInput,
  options: { touchLead?: boolean } = {},
): StoredRecord<LeadBookingAttrs> {
  const record = ctx.records.insert<LeadBookingAttrs>(
    'lead_booking',
    lead.businessId,
    (id) =>
      resolveBooking(
        ctx,
        lead.businessId,
        {
          id,
          lead_id: lead.id,
          brand_id: lead.attrs.brand_id,
          event_type_id: null,
          event_category_id: null,
          package_group_id: null,
          name: null,
          service_name: null,
          package_group_name: null,
          starts_at_date: null,
          starts_at_minutes: null,
          starts_at: null,
          ends_at: null,
          length_in_minutes: null,
          length_in_days: null,
          units: null,
          package_unit_range_id: null,
          staff_id: null,
          staff_name: null,
          photobooth_background_id: null,
          preview_image: DEFAULT_PREVIEW_IMAGE,
          created_at: ctx.clock.iso(),
        },
        { event_type_id: null, ...input },
        true,
      ),
    { parentId: lead.id },
  );
  if (options.touchLead) touchLead(ctx, lead.businessId, lead.id);
  return record;
}

export function updateLeadBooking(
  ctx: SandboxContext,
  record: StoredRecord<LeadBookingAttrs>,
  input: LeadBookingInput,
): StoredRecord<LeadBookingAttrs> {
  const next = resolveBooking(ctx, record.businessId, record.attrs, input, false);
  const updated = ctx.records.update(record, next);
  touchLead(ctx, record.businessId, record.attrs.lead_id);
  return updated;
}

/**
 * A booking change alters the lead's flattened fields, so the lead reports a change too
 * (webhook consumers re-read the lead, whose list form would otherwise go stale).
 */
export function touchLead(ctx: SandboxContext, businessId: number, leadId: number): void {
  const lead = ctx.records.get('lead', businessId, leadId);
  if (lead) ctx.records.update(lead, {});
}

/** Live bookings of the given leads, in id order (so a lead's first is its primary). */
export function bookingsOfLeads(
  ctx: SandboxContext,
  leadIds: readonly number[],
): Map<number, StoredRecord<LeadBookingAttrs>[]> {
  return ctx.records.childrenOfMany<LeadBookingAttrs>('lead_booking', leadIds);
}
