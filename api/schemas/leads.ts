import { z } from 'zod';
import { itemSchema, nullableBool, nullableInt, nullableString } from './envelope.js';
import { ymdSchema } from './formats.js';

/** lead attributes (spec: "lead (type lead)"). Nullable where the spec says so, open enums. */
export const leadAttributesSchema = z.looseObject({
  id: z.number().int(),
  email: nullableString,
  first_name: nullableString,
  last_name: nullableString,
  company_name: nullableString,
  phone: nullableString,
  phone_normalized: nullableString,
  event_date: nullableString,
  event_time: nullableString,
  venue_name: nullableString,
  venue_address: nullableString,
  venue_city: nullableString,
  venue_state: nullableString,
  venue_zip: nullableString,
  subject: nullableString,
  message: nullableString,
  source: nullableString,
  notes: nullableString,
  lead_type: nullableString,
  origin: nullableString,
  times_contacted: nullableInt,
  starts_at: nullableString,
  ends_at: nullableString,
  title: nullableString,
  brand_id: nullableInt,
  brand_name: nullableString,
  created_at: nullableString,
  token: nullableString,
  spam: nullableBool,
  archived: nullableBool,
  converted_to_event: nullableBool,
  formatted_time_range: nullableString,
  formatted_date_range: nullableString,
  formatted_datetime_range: nullableString,
  custom_fields: z.array(z.unknown()).nullable().optional(),
  resume_booking_link: nullableString,
});
export type LeadAttributes = z.infer<typeof leadAttributesSchema>;
export const leadSchema = itemSchema(leadAttributesSchema);
export type Lead = z.infer<typeof leadSchema>;

export const LEAD_SOURCES = ['Manual Entry', 'Lead Form', 'Online Booking', 'App', 'API'] as const;

const ymd = ymdSchema;

/** POST /api/v1/leads body (strict writer: unknown fields are refused before sending). */
export const createLeadBodySchema = z.strictObject({
  email: z.email(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  phone: z.string().optional(),
  company_name: z.string().optional(),
  staff_id: z.number().int().positive().optional(),
  employee_id: z.number().int().positive().optional(),
  /** Allowed values include two the spec names without spelling; any string is passed on. */
  lead_source: z.string().min(1).optional(),
  contact_preference: z.enum(['Email', 'Phone', 'Text Message']).optional(),
  lead_type: z.string().optional(),
  notes: z.string().optional(),
  event_date: ymd.optional(),
  event_time: z.string().optional(),
  length_in_minutes: z.number().int().positive().optional(),
  estimated_budget: z.number().nonnegative().optional(),
  estimated_number_guests: z.number().int().nonnegative().optional(),
  venue_name: z.string().optional(),
  venue_address: z.string().optional(),
  venue_city: z.string().optional(),
  venue_state: z.string().optional(),
  venue_zip: z.string().optional(),
  indoor_outdoor: z.enum(['Indoor', 'Outdoor']).optional(),
  service_id: z.number().int().positive().optional(),
  package_id: z.number().int().positive().optional(),
  referred_by_user_id: z.number().int().positive().optional(),
  next_follow_up_on: ymd.optional(),
  subject: z.string().optional(),
  message: z.string().optional(),
  utm_source: z.string().optional(),
  utm_campaign: z.string().optional(),
  utm_medium: z.string().optional(),
  utm_term: z.string().optional(),
  utm_content: z.string().optional(),
  ad_click_id: z.string().optional(),
  custom_questions: z.record(z.string(), z.unknown()).optional(),
});
export type CreateLeadBody = z.input<typeof createLeadBodySchema>;

/** What GET /leads can sideload (the sandbox allows the same). */
export const LEAD_INCLUDES = ['lead_bookings'] as const;

export const leadListQuerySchema = z.strictObject({
  email: z.string().optional(),
  text: z.string().optional(),
  origin: z.string().optional(),
  lead_type: z.string().optional(),
  source: z.string().optional(),
  include: z.enum(LEAD_INCLUDES).optional(),
  page: z.number().int().positive().optional(),
  per: z.number().int().positive().optional(),
});
export type LeadListQuery = z.input<typeof leadListQuerySchema>;

export const leadBookingQuestionSchema = itemSchema(
  z.looseObject({
    id: z.union([z.number().int(), z.string()]),
    lead_id: nullableInt,
    booking_question_id: nullableInt,
    editable: nullableBool,
    column_name: nullableString,
    name: nullableString,
    label: nullableString,
    kind: nullableString,
    value: z.unknown().optional(),
    formatted_value: z.unknown().optional(),
    archived: nullableBool,
  }),
);
