import type { SandboxContext } from '../context.js';
import { sql } from '../db.js';
import { referenceExists } from './lead-bookings-model.js';
import { readAnswers } from './lead-questions.js';
import { BodyFields, isEmail, MAX_LENGTH_MINUTES } from '../body-fields.js';
import {
  LEAD_SOURCES,
  CONTACT_PREFERENCES,
  INDOOR_OUTDOOR,
  type LeadInput,
} from './leads-model.js';

/** Reading a lead's create body (the spec's field table) into LeadInput. */

/** Validates a create body against the spec's table; throws one 422 naming every field. */
export function readLeadInput(
  ctx: SandboxContext,
  businessId: number,
  body: Record<string, unknown>,
): LeadInput {
  const f = new BodyFields(body);
  const input: Partial<LeadInput> & Record<string, unknown> = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined && value !== null) input[name] = value;
  };

  const email = f.string('email');
  if (email === null || (email === undefined && !f.sent('email'))) {
    f.errors.add('email', "can't be blank");
  } else if (email !== undefined && !isEmail(email)) {
    f.errors.add('email', 'is invalid');
  } else put('email', email);

  for (const name of [
    'first_name',
    'last_name',
    'phone',
    'company_name',
    'lead_type',
    'notes',
    'venue_name',
    'venue_city',
    'venue_state',
    'venue_zip',
    'subject',
    'message',
    'utm_source',
    'utm_campaign',
    'utm_medium',
    'utm_term',
    'utm_content',
    'ad_click_id',
  ]) {
    put(name, f.string(name));
  }
  // venue_street is the earlier name of venue_address; the current name wins.
  const venueStreet = f.string('venue_street');
  put('venue_address', f.string('venue_address') ?? venueStreet);

  put('lead_source', f.oneOf('lead_source', LEAD_SOURCES));
  put('contact_preference', f.oneOf('contact_preference', CONTACT_PREFERENCES));
  put('indoor_outdoor', f.oneOf('indoor_outdoor', INDOOR_OUTDOOR));
  put('event_date', f.date('event_date'));
  put('next_follow_up_on', f.date('next_follow_up_on'));
  put('event_time', f.time('event_time'));
  // event_length is the earlier name of length_in_minutes; the current name wins.
  const eventLength = f.integer('event_length', 1, MAX_LENGTH_MINUTES);
  put('length_in_minutes', f.integer('length_in_minutes', 1, MAX_LENGTH_MINUTES) ?? eventLength);
  put('estimated_budget', f.amount('estimated_budget'));
  put('estimated_number_guests', f.integer('estimated_number_guests', 0));
  put('contact_form_id', f.integer('contact_form_id'));

  const checkRef = (
    field: string,
    kind: 'package' | 'service' | 'staff',
    target: keyof LeadInput,
  ): boolean => {
    const id = f.integer(field);
    if (id === undefined || id === null) return false;
    if (!referenceExists(ctx, businessId, kind, id)) f.errors.add(field, 'must exist');
    else put(target, id);
    return true;
  };
  checkRef('package_id', 'package', 'package_id');
  checkRef('service_id', 'service', 'service_id');
  // employee_id is the earlier name of staff_id; staff_id wins when both are sent.
  if (!checkRef('staff_id', 'staff', 'staff_id')) checkRef('employee_id', 'staff', 'staff_id');
  const referrer = f.integer('referred_by_user_id');
  if (typeof referrer === 'number') {
    const exists = sql(ctx.db, 'SELECT 1 FROM users WHERE id = ? AND business_id = ?').get(
      referrer,
      businessId,
    );
    if (!exists) f.errors.add('referred_by_user_id', 'must exist');
    else put('referred_by_user_id', referrer);
  }

  if (f.sent('custom_questions') && body.custom_questions !== null) {
    put('custom_questions', readAnswers(ctx, businessId, body.custom_questions, f.errors));
  }
  f.errors.throwIfAny();
  return input as LeadInput;
}

/** Module level, not inside newLeadAttrs: tsx re-names a nested arrow on every call. */
