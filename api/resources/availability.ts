import type { Transport } from '../transport.js';
import {
  appointmentSlotsQuerySchema,
  availabilityQuerySchema,
  availabilitySchema,
  detailedAvailabilityQuerySchema,
  detailedAvailabilitySchema,
  slotsSchema,
  timeSlotsQuerySchema,
  type AppointmentSlotsQuery,
  type AvailabilityQuery,
  type DetailedAvailabilityQuery,
  type TimeSlotsQuery,
} from '../schemas/availability.js';

/** Availability lookups: inventory for a date, detailed checks, package and calendar slots. */
export function availabilityResource(t: Transport) {
  return {
    check: (query: AvailabilityQuery) =>
      t.call('availability.check', {
        query,
        querySchema: availabilityQuerySchema,
        responseSchema: availabilitySchema,
      }),

    detailed: (query: DetailedAvailabilityQuery) =>
      t.call('availability.detailed', {
        query,
        querySchema: detailedAvailabilityQuerySchema,
        responseSchema: detailedAvailabilitySchema,
      }),

    timeSlots: (query: TimeSlotsQuery) =>
      t.call('availability.timeSlots', {
        query,
        querySchema: timeSlotsQuerySchema,
        responseSchema: slotsSchema,
      }),

    appointmentSlots: (query: AppointmentSlotsQuery) =>
      t.call('availability.appointmentSlots', {
        query,
        querySchema: appointmentSlotsQuerySchema,
        responseSchema: slotsSchema,
      }),
  };
}
