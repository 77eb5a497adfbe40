import type { SandboxContext } from '../context.js';
import { sql, type RecordAttrs } from '../db.js';

/**
 * Lead bookings: the package/date selections attached to a lead (a lead's first live booking
 * is its primary one, whose fields the lead list flattens into the lead).
 *
 * Record types (all owned by the business; parent in brackets):
 * - `lead_booking` [lead]: LeadBookingAttrs below. `starts_at`/`ends_at` are zoned ISO strings
 *   in the business time zone (so their first 10 characters are the local event date, which
 *   the date filters compare on); `starts_at_date`/`starts_at_minutes` keep what was asked for
 *   separately, because a booking may have a date without a time, or a package without a date.
 * - `lead_add_on` [lead_booking]: { id, lead_booking_id, add_on_id, name, quantity,
 *   price_cents } — price_cents is the add-on's unit price when it was added.
 * - `lead_extra` [lead_booking] and `lead_booking_extra_category` [lead_booking]: no operation
 *   creates them; the seed generator may insert them ({ id, name, ... } with lead_extras
 *   carrying lead_booking_extra_category_id), and they are then listed and sideloaded.
 * The booking's backdrop is `photobooth_background_id` on the booking itself (one at most).
 */
export interface LeadBookingAttrs extends RecordAttrs {
  id: number;
  lead_id: number;
  brand_id: number;
  /** The package. */
  event_type_id: number | null;
  /** The service. */
  event_category_id: number | null;
  package_group_id: number | null;
  /** Package name. */
  name: string | null;
  service_name: string | null;
  package_group_name: string | null;
  starts_at_date: string | null;
  starts_at_minutes: number | null;
  starts_at: string | null;
  ends_at: string | null;
  length_in_minutes: number | null;
  length_in_days: number | null;
  units: number | null;
  package_unit_range_id: number | null;
  staff_id: number | null;
  staff_name: string | null;
  photobooth_background_id: number | null;
  preview_image: string;
  created_at: string;
}

export interface LeadAddOnAttrs extends RecordAttrs {
  id: number;
  lead_booking_id: number;
  add_on_id: number;
  name: string;
  quantity: number;
  price_cents: number;
}

/** The fields a booking is created or updated with; a key that is present changes (null clears). */
export interface LeadBookingInput {
  event_type_id?: number | null;
  event_category_id?: number | null;
  package_group_id?: number | null;
  /** YYYY-MM-DD */
  starts_at_date?: string | null;
  /** '6:00 PM' (or '18:00') */
  starts_at_time?: string | null;
  length_in_minutes?: number | null;
  length_in_days?: number | null;
  units?: number | null;
  package_unit_range_id?: number | null;
  staff_id?: number | null;
}

export const DEFAULT_PREVIEW_IMAGE = '/images/packages/default.jpg';

/** A user of the business who can be assigned to work (customers cannot). */
export function staffMember(
  ctx: SandboxContext,
  businessId: number,
  id: number,
): { id: number; name: string; email: string } | undefined {
  return sql(
    ctx.db,
    "SELECT id, name, email FROM users WHERE id = ? AND business_id = ? AND role != 'customer'",
  ).get(id, businessId) as { id: number; name: string; email: string } | undefined;
}

export type ReferenceKind = 'package' | 'service' | 'package_group' | 'staff';

/** Whether an id sent in a body names a live record of the business. */
export function referenceExists(
  ctx: SandboxContext,
  businessId: number,
  kind: ReferenceKind,
  id: number,
): boolean {
  if (kind === 'staff') return staffMember(ctx, businessId, id) !== undefined;
  return ctx.records.get(kind, businessId, id) !== undefined;
}

/** Reads the booking fields of an update or add-to-lead body; throws 422 listing every problem. */
