import type { SandboxContext } from '../context.js';
import {
  BodyFields,
  ID,
  MAX_LENGTH_DAYS,
  MAX_LENGTH_MINUTES,
  numberField,
} from '../body-fields.js';
import type { StoredRecord } from '../db.js';
import { FieldErrors } from '../errors.js';
import { getBackdrop } from './offerings.js';
import {
  type LeadBookingAttrs,
  type LeadBookingInput,
  type ReferenceKind,
  referenceExists,
} from './lead-bookings-model.js';

/** Reading a lead booking's body into LeadBookingInput. */

/** The largest value of each integer field that has one: its end must stay a timestamp. */
const LENGTH_BOUNDS: Partial<Record<string, number>> = {
  length_in_minutes: MAX_LENGTH_MINUTES,
  length_in_days: MAX_LENGTH_DAYS,
};

export function readLeadBookingInput(
  ctx: SandboxContext,
  businessId: number,
  body: Record<string, unknown>,
): LeadBookingInput {
  const f = new BodyFields(body);
  const input = leadBookingFields(ctx, businessId, f);
  f.errors.throwIfAny();
  return input;
}

/** The fields of a booking body that were sent, each checked; refusals go to `f.errors`. */
function leadBookingFields(
  ctx: SandboxContext,
  businessId: number,
  f: BodyFields,
): LeadBookingInput {
  const input: LeadBookingInput = {};
  const refs: [keyof LeadBookingInput, ReferenceKind][] = [
    ['event_type_id', 'package'],
    ['event_category_id', 'service'],
    ['package_group_id', 'package_group'],
    ['staff_id', 'staff'],
  ];
  for (const [name, kind] of refs) {
    const value = f.integer(name);
    if (value === undefined) continue;
    if (value !== null && !referenceExists(ctx, businessId, kind, value)) {
      f.errors.add(name, 'must exist');
      continue;
    }
    (input as Record<string, unknown>)[name] = value;
  }
  const date = f.date('starts_at_date');
  if (date !== undefined) input.starts_at_date = date;
  const time = f.time('starts_at_time');
  if (time !== undefined) input.starts_at_time = time;
  for (const name of [
    'length_in_minutes',
    'length_in_days',
    'units',
    'package_unit_range_id',
  ] as const) {
    const value = f.integer(name, 1, LENGTH_BOUNDS[name]);
    if (value !== undefined) input[name] = value;
  }
  return input;
}

/**
 * An admin edit of a stored booking (PATCH /admin/records/lead_booking/:id) is held to the
 * public write path's rules for the fields that path takes, and the fields the API sets itself
 * must name records of the business: checked only for their kind, a length of -5, a package
 * that does not exist or a lead that does not were stored and served. Throws one 422.
 */
export function checkLeadBookingEdit(
  ctx: SandboxContext,
  record: StoredRecord<LeadBookingAttrs>,
  patch: Record<string, unknown>,
): void {
  const businessId = record.businessId;
  const errors = new FieldErrors('attributes.');
  leadBookingFields(ctx, businessId, new BodyFields(patch, errors));
  const owned: [string, string, (id: number) => boolean][] = [
    ['lead_id', 'a lead', (id) => ctx.records.get('lead', businessId, id) !== undefined],
    ['brand_id', 'a brand', (id) => ctx.records.get('brand', businessId, id) !== undefined],
    [
      'photobooth_background_id',
      'a backdrop',
      (id) => getBackdrop(ctx.records, businessId, id) !== undefined,
    ],
  ];
  for (const [name, what, exists] of owned) {
    const id = numberField(patch, name, errors, ID);
    if (typeof id === 'number' && !exists(id)) errors.add(name, `must be ${what} of this business`);
  }
  // Minutes after midnight of the start, as the API stores a start time.
  numberField(patch, 'starts_at_minutes', errors, { integer: true, min: 0, max: 1439 });
  errors.throwIfAny();
}
