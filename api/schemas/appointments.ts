import { z } from 'zod';
import { itemSchema, nullableBool, nullableInt, nullableString } from './envelope.js';
import { idSchema, pagingQueryFields, time12Schema, ymdSchema } from './formats.js';

/**
 * Appointment record attributes are "not shown beyond" the input fields, guest information,
 * date and time, location, meeting links and assigned staff: the input fields are named,
 * everything else passes through.
 */
export const appointmentAttributesSchema = z.looseObject({
  id: z.number().int(),
  guest_name: nullableString,
  guest_email: nullableString,
  guest_phone: nullableString,
  additional_guests: z.unknown().optional(),
  starts_at: nullableString,
  ends_at: nullableString,
  starts_at_date: nullableString,
  starts_at_time: nullableString,
  length_in_minutes: z.union([z.number(), z.string()]).nullable().optional(),
  location: nullableString,
  location_details: nullableString,
  private_notes: nullableString,
  message: nullableString,
  user_id: nullableInt,
  brand_id: nullableInt,
  user_appointment_calendar_id: nullableInt,
  /** quick_add, widget or app; any other value is kept as a string. */
  created_via: nullableString,
  custom_title: nullableString,
  title: nullableString,
  canceled: nullableBool,
});
export type AppointmentAttributes = z.infer<typeof appointmentAttributesSchema>;
export const appointmentSchema = itemSchema(appointmentAttributesSchema);
export type Appointment = z.infer<typeof appointmentSchema>;

/** appointment booking question entries: id is an integer or a built-in's name. */
export const appointmentBookingQuestionSchema = itemSchema(
  z.looseObject({
    id: z.union([z.number().int(), z.string()]),
    column_name: nullableString,
    label: nullableString,
    kind: nullableString,
    intent: nullableString,
    built_in: nullableBool,
    value: z.unknown().optional(),
    formatted_value: z.unknown().optional(),
  }),
);
export type AppointmentBookingQuestion = z.infer<typeof appointmentBookingQuestionSchema>;

export const appointmentListQuerySchema = z.strictObject({
  start_date: ymdSchema.optional(),
  end_date: ymdSchema.optional(),
  /** A staff id, or 'my' for the authenticated user. */
  staff_id: z.union([idSchema, z.literal('my')]).optional(),
  brand_id: idSchema.optional(),
  canceled_status: z.string().min(1).optional(),
  past_or_future: z.string().min(1).optional(),
  search_text: z.string().optional(),
  ...pagingQueryFields,
});
export type AppointmentListQuery = z.input<typeof appointmentListQuerySchema>;

export const CREATED_VIA = ['quick_add', 'widget', 'app'] as const;
export type CreatedVia = (typeof CREATED_VIA)[number];

/** additional_guests: the spec names the field without a shape; e-mails or { name, email }. */
const additionalGuestsSchema = z.array(
  z.union([z.email(), z.strictObject({ name: z.string().optional(), email: z.email() })]),
);

export const createAppointmentBodySchema = z.strictObject({
  guest_name: z.string().min(1),
  guest_email: z.email(),
  guest_phone: z.string().optional(),
  additional_guests: additionalGuestsSchema.optional(),
  starts_at_date: ymdSchema,
  starts_at_time: time12Schema,
  length_in_minutes: z.number().int().positive(),
  location: z.string().optional(),
  location_details: z.string().optional(),
  private_notes: z.string().optional(),
  message: z.string().optional(),
  user_id: idSchema.optional(),
  brand_id: idSchema.optional(),
  user_appointment_calendar_id: idSchema.optional(),
  created_via: z.enum(CREATED_VIA),
  custom_title: z.string().optional(),
});
export type CreateAppointmentBody = z.input<typeof createAppointmentBodySchema>;

/** Update: only the fields sent change. */
export const updateAppointmentBodySchema = z.strictObject({
  guest_name: z.string().min(1).optional(),
  guest_email: z.email().optional(),
  guest_phone: z.string().optional(),
  additional_guests: additionalGuestsSchema.optional(),
  starts_at_date: ymdSchema.optional(),
  starts_at_time: time12Schema.optional(),
  length_in_minutes: z.number().int().positive().optional(),
  location: z.string().optional(),
  location_details: z.string().optional(),
  private_notes: z.string().optional(),
  custom_title: z.string().optional(),
  brand_id: idSchema.optional(),
});
export type UpdateAppointmentBody = z.input<typeof updateAppointmentBodySchema>;

export const duplicateAppointmentBodySchema = z.strictObject({
  starts_at_date: ymdSchema,
  starts_at_time: time12Schema,
});
export type DuplicateAppointmentBody = z.input<typeof duplicateAppointmentBodySchema>;

/**
 * custom_questions (required) plus built-in answers "such as guest_phone, event_date,
 * venue_name": the named ones are checked, other built-ins pass as scalars.
 */
export const appointmentBookingQuestionsBodySchema = z
  .object({
    custom_questions: z.record(z.string(), z.unknown()),
    guest_phone: z.string().nullable().optional(),
    event_date: ymdSchema.nullable().optional(),
    venue_name: z.string().nullable().optional(),
  })
  .catchall(z.union([z.string(), z.number(), z.boolean(), z.null()]));
export interface AppointmentBookingQuestionsBody {
  custom_questions: Record<string, unknown>;
  guest_phone?: string | null;
  /** YYYY-MM-DD */
  event_date?: string | null;
  venue_name?: string | null;
  /** Other built-in answers, as scalars. */
  [builtIn: string]: unknown;
}

export const appointmentGetQuerySchema = z.strictObject({
  include: z.enum(['user_appointments']).optional(),
});
export type AppointmentGetQuery = z.input<typeof appointmentGetQuerySchema>;
