import type { SandboxContext } from '../context.js';
import { BodyFields, MAX_LENGTH_DAYS, MAX_LENGTH_MINUTES } from '../body-fields.js';
import {
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
  f.errors.throwIfAny();
  return input;
}
