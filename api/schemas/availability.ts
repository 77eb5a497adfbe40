import { z } from 'zod';
import { idSchema, time12Schema, ymdSchema } from './formats.js';

/**
 * Availability lookups. The fields inside inventory data and slot entries are not shown in
 * the spec: they are read as open objects.
 */
export const availabilityQuerySchema = z
  .strictObject({
    event_date: ymdSchema.optional(),
    starts_at: ymdSchema.optional(),
    ends_at: ymdSchema.optional(),
    package_id: idSchema.optional(),
  })
  .superRefine((q, ctx) => {
    const range = q.starts_at !== undefined || q.ends_at !== undefined;
    if (q.event_date === undefined && !range) {
      ctx.addIssue({
        code: 'custom',
        path: ['event_date'],
        message: 'give event_date, or starts_at and ends_at',
      });
    }
    if (range && (q.starts_at === undefined || q.ends_at === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [q.starts_at === undefined ? 'starts_at' : 'ends_at'],
        message: 'starts_at and ends_at go together',
      });
    }
  });
export type AvailabilityQuery = z.input<typeof availabilityQuerySchema>;

/** Inventory info: available, partially available or fully booked. */
export const availabilitySchema = z.looseObject({
  meta: z.looseObject({}).optional(),
  data: z.unknown(),
});
export type Availability = z.infer<typeof availabilitySchema>;

const isoInstant = z.iso.datetime({ offset: true });

export const detailedAvailabilityQuerySchema = z.strictObject({
  starts_at_date: ymdSchema.optional(),
  starts_at_time: time12Schema.optional(),
  ends_at_time: time12Schema.optional(),
  starts_at: isoInstant.optional(),
  ends_at: isoInstant.optional(),
  package_id: idSchema.optional(),
  add_on_id: idSchema.optional(),
  backdrop_id: idSchema.optional(),
  staff_id: idSchema.optional(),
  lookup_type: z.string().min(1).optional(),
  quantity: z.number().int().positive().optional(),
});
export type DetailedAvailabilityQuery = z.input<typeof detailedAvailabilityQuerySchema>;

const detailed = z.looseObject({
  available: z.boolean(),
  messages: z.array(z.unknown()),
  overlapping_bookings: z.array(z.unknown()),
});
/** The spec shows the answer bare; an answer wrapped in data is read the same way. */
export const detailedAvailabilitySchema = z.union([
  detailed,
  z.looseObject({ data: detailed }).transform((body) => body.data),
]);
export type DetailedAvailability = z.infer<typeof detailedAvailabilitySchema>;

export const timeSlotsQuerySchema = z.strictObject({
  event_date: ymdSchema,
  package_id: idSchema,
  /** Overrides the package's default length. */
  length_in_minutes: z.number().int().positive().optional(),
});
export type TimeSlotsQuery = z.input<typeof timeSlotsQuerySchema>;

export const appointmentSlotsQuerySchema = z.strictObject({
  user_id: idSchema,
  user_appointment_calendar_id: idSchema,
  selected_date: ymdSchema,
});
export type AppointmentSlotsQuery = z.input<typeof appointmentSlotsQuerySchema>;

/** { data: [slots] }; a slot's fields (start time, status, display name) are not named by the spec. */
export const slotsSchema = z.looseObject({
  meta: z.looseObject({}).optional(),
  data: z.array(z.looseObject({})),
});
export type Slots = z.infer<typeof slotsSchema>;
