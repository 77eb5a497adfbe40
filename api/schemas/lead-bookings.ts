import { z } from 'zod';
import { itemSchema, nullableInt, nullableString } from './envelope.js';
import { idSchema, pagingQueryFields, time12Schema, ymdSchema } from './formats.js';

/** lead_booking attributes (spec: "lead_booking (type lead_booking)"). */
export const leadBookingAttributesSchema = z.looseObject({
  id: z.number().int(),
  lead_id: nullableInt,
  /** The package. */
  event_type_id: nullableInt,
  starts_at: nullableString,
  ends_at: nullableString,
  staff_id: nullableInt,
  staff_name: nullableString,
  /** Package name. */
  name: nullableString,
  service_name: nullableString,
  package_group_name: nullableString,
  title: nullableString,
  brand_name: nullableString,
  /** Value seen: date_time; others are read as plain strings. */
  date_mode: nullableString,
  length_in_minutes: z.union([z.number(), z.string()]).nullable().optional(),
  length_in_days: z.union([z.number(), z.string()]).nullable().optional(),
  units: z.union([z.number(), z.string()]).nullable().optional(),
  package_unit_range_id: nullableInt,
  event_type_unit_range: z.unknown().optional(),
  formatted_date_range: nullableString,
  formatted_time_range: nullableString,
  formatted_units: nullableString,
  preview_image: nullableString,
});
export type LeadBookingAttributes = z.infer<typeof leadBookingAttributesSchema>;
export const leadBookingSchema = itemSchema(leadBookingAttributesSchema);
export type LeadBooking = z.infer<typeof leadBookingSchema>;

export const LEAD_BOOKING_INCLUDES = [
  'lead_add_ons',
  'lead_extras',
  'lead_booking_extra_categories',
  'lead_booking_extra_categories.lead_extras',
  'photobooth_background',
] as const;
export type LeadBookingInclude = (typeof LEAD_BOOKING_INCLUDES)[number];

/** The include parameter as the service takes it: a comma list. */
export const leadBookingIncludeSchema = z
  .string()
  .refine(
    (text) =>
      text.split(',').every((part) => (LEAD_BOOKING_INCLUDES as readonly string[]).includes(part)),
    `include must be a comma list of ${LEAD_BOOKING_INCLUDES.join(', ')}`,
  );

export const leadBookingListQuerySchema = z.strictObject({
  event_date_start: ymdSchema.optional(),
  event_date_end: ymdSchema.optional(),
  brand_id: idSchema.optional(),
  include: leadBookingIncludeSchema.optional(),
  ...pagingQueryFields,
});
export type LeadBookingListQuery = z.input<typeof leadBookingListQuerySchema>;

/** Update and add-to-lead body: every field optional; only fields sent change. */
export const leadBookingBodySchema = z.strictObject({
  event_type_id: idSchema.optional(),
  event_category_id: idSchema.optional(),
  package_group_id: idSchema.optional(),
  starts_at_date: ymdSchema.optional(),
  starts_at_time: time12Schema.optional(),
  length_in_minutes: z.number().int().positive().optional(),
  length_in_days: z.number().int().positive().optional(),
  units: z.number().int().positive().optional(),
  package_unit_range_id: idSchema.optional(),
  /** An empty string clears the staff member. */
  staff_id: z.union([idSchema, z.literal('')]).optional(),
});
export type LeadBookingBody = z.input<typeof leadBookingBodySchema>;

export const addLeadAddOnBodySchema = z.strictObject({
  add_on_id: idSchema,
  /** The service defaults to 1. */
  quantity: z.number().int().positive().optional(),
});
export type AddLeadAddOnBody = z.input<typeof addLeadAddOnBodySchema>;

export const setBackdropBodySchema = z.strictObject({ photobooth_background_id: idSchema });
export type SetBackdropBody = z.input<typeof setBackdropBodySchema>;

/** lead_add_on, the record the add-on operation returns; its fields are not shown in the spec. */
export const leadAddOnSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    lead_booking_id: nullableInt,
    add_on_id: nullableInt,
    name: nullableString,
    quantity: nullableInt,
  }),
);
export type LeadAddOn = z.infer<typeof leadAddOnSchema>;
