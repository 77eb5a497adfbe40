import type { z } from 'zod';
import { appointmentAttributesSchema } from '../api/schemas/appointments.js';
import { eventAttributesSchema, eventBookingAttributesSchema } from '../api/schemas/events.js';
import { leadBookingAttributesSchema } from '../api/schemas/lead-bookings.js';
import { leadAttributesSchema } from '../api/schemas/leads.js';
import type { RecordAttrs } from './db.js';
import { FieldErrors } from './errors.js';
import { parseYmd, YEARS } from './time.js';

/**
 * What PATCH /admin/records/:type/:id accepts: a change staff could make in the service. The
 * service never serves a record out of its own spec, so neither may the sandbox after an admin
 * edit (a mirror reading it would take the sandbox's mistake for the service's): an attribute
 * the record does not have, a value of another kind than the one stored, or one the spec's
 * attribute of the same name refuses is a 422 naming the field, and nothing is written.
 */

/** The spec's attributes of the types the API serves, by the names they are served under. */
const SERVED: Readonly<Record<string, z.ZodObject>> = {
  lead: leadAttributesSchema,
  lead_booking: leadBookingAttributesSchema,
  event: eventAttributesSchema,
  event_booking: eventBookingAttributesSchema,
  appointment: appointmentAttributesSchema,
};

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';

function kindOf(value: unknown): Kind | undefined {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const kind = typeof value;
  return kind === 'string' || kind === 'number' || kind === 'boolean' || kind === 'object'
    ? kind
    : undefined;
}

const ARTICLE: Record<Kind, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * Whether a value is an ISO 8601 timestamp with a UTC offset on a real calendar day, in the
 * years the API takes: the spec's form of every timestamp, and the kind of value an attribute
 * stored as one holds. A string of another form there ('garbage', a bare date) was taken as a
 * string, and the views that read it as a time threw: the record, and every page of its list,
 * answered 500; a start in the year 9999 was served, where the API refuses the date.
 */
function isTimestamp(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const m = TIMESTAMP.exec(value);
  if (!m || !parseYmd(value.slice(0, 10))) return false;
  const [hour, minute, second, offsetHour, offsetMinute] = m
    .slice(4)
    .map((part) => Number(part ?? 0));
  return (
    (hour ?? 0) <= 23 &&
    (minute ?? 0) <= 59 &&
    (second ?? 0) <= 59 &&
    (offsetHour ?? 0) <= 23 &&
    (offsetMinute ?? 0) <= 59
  );
}

/** Throws one 422 naming every attribute of `patch` the record `type` cannot take. */
export function checkRecordPatch(
  type: string,
  id: number,
  stored: RecordAttrs,
  patch: Record<string, unknown>,
): void {
  const errors = new FieldErrors();
  const served = SERVED[type]?.shape as Record<string, z.ZodType> | undefined;
  for (const [name, value] of Object.entries(patch)) {
    const field = `attributes.${name}`;
    if (name === 'id') {
      if (value !== id) errors.add(field, 'cannot be changed', name);
      continue;
    }
    if (!(name in stored)) {
      errors.add(field, `is not an attribute of this ${type}`, name);
      continue;
    }
    const now = kindOf(stored[name]);
    const next = kindOf(value);
    if (next !== 'null' && now !== 'null' && now !== undefined && next !== now) {
      errors.add(field, `must be ${ARTICLE[now]}, as stored`, name);
      continue;
    }
    // A timestamp where one is stored, and any value written as one (a null start is set so).
    const timestamp =
      isTimestamp(stored[name]) || (typeof value === 'string' && TIMESTAMP.test(value));
    if (next !== 'null' && timestamp && !isTimestamp(value)) {
      errors.add(
        field,
        `must be an ISO 8601 timestamp with a UTC offset, ${YEARS}, as stored`,
        name,
      );
      continue;
    }
    // Only where the stored value is already in the served form (some attributes are
    // stored otherwise, and the view turns them into what the spec names).
    const spec = served?.[name];
    if (spec?.safeParse(stored[name]).success && !spec.safeParse(value).success) {
      errors.add(field, `is refused by the spec's ${type}.${name}`, name);
    }
  }
  errors.throwIfAny();
}
