import type { z } from 'zod';
import type { Transport } from '../transport.js';
import { paginate, type Page, type PagingOptions } from '../paging.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  appointmentBookingQuestionSchema,
  appointmentBookingQuestionsBodySchema,
  appointmentGetQuerySchema,
  appointmentListQuerySchema,
  appointmentSchema,
  createAppointmentBodySchema,
  duplicateAppointmentBodySchema,
  updateAppointmentBodySchema,
  type Appointment,
  type AppointmentBookingQuestionsBody,
  type AppointmentGetQuery,
  type AppointmentListQuery,
  type CreateAppointmentBody,
  type DuplicateAppointmentBody,
  type UpdateAppointmentBody,
} from '../schemas/appointments.js';

const appointmentList = listSchema(appointmentSchema);
const appointmentSingle = singleSchema(appointmentSchema);

/** Appointments: meetings between staff and guests. */
export function appointmentsResource(t: Transport) {
  return {
    /** One page; prefer `pages()` to read everything. */
    list: (query: AppointmentListQuery = {}) =>
      t.call('appointments.list', {
        query,
        querySchema: appointmentListQuerySchema,
        responseSchema: appointmentList,
      }),

    pages: (
      query: AppointmentListQuery = {},
      options: PagingOptions = {},
    ): AsyncGenerator<Page<Appointment>> =>
      paginate(
        'appointments.list',
        (page, per) =>
          t.call('appointments.list', {
            query: { ...query, page, per },
            querySchema: appointmentListQuerySchema,
            responseSchema: appointmentList,
          }),
        options,
      ),

    count: async (query: AppointmentListQuery = {}): Promise<number> => {
      const body = await t.call('appointments.list', {
        query: { ...query, page: 1, per: 1 },
        querySchema: appointmentListQuerySchema,
        responseSchema: appointmentList,
      });
      return body.meta.total_count ?? body.data.length;
    },

    create: (body: CreateAppointmentBody) =>
      t.call('appointments.create', {
        body,
        bodySchema: createAppointmentBodySchema,
        responseSchema: appointmentSingle,
      }),

    get: (id: number, query: AppointmentGetQuery = {}) =>
      t.call('appointments.get', {
        params: { id },
        query,
        querySchema: appointmentGetQuerySchema,
        responseSchema: appointmentSingle,
      }),

    /** Only the fields sent change; a new time sends the guest a rescheduled notification. */
    update: (id: number, body: UpdateAppointmentBody) =>
      t.call('appointments.update', {
        params: { id },
        body,
        bodySchema: updateAppointmentBodySchema,
        responseSchema: appointmentSingle,
      }),

    /** Soft delete. */
    delete: (id: number) =>
      t.call('appointments.delete', { params: { id }, responseSchema: okSchema }),

    cancel: (id: number) =>
      t.call('appointments.cancel', { params: { id }, responseSchema: appointmentSingle }),

    uncancel: (id: number) =>
      t.call('appointments.uncancel', { params: { id }, responseSchema: appointmentSingle }),

    /** A copy at a new date and time; guest details and settings carry over. */
    duplicate: (id: number, body: DuplicateAppointmentBody) =>
      t.call('appointments.duplicate', {
        params: { id },
        body,
        bodySchema: duplicateAppointmentBodySchema,
        responseSchema: appointmentSingle,
      }),

    bookingQuestions: (appointmentId: number) =>
      t.call('appointments.bookingQuestions', {
        params: { appointment_id: appointmentId },
        responseSchema: listSchema(appointmentBookingQuestionSchema),
      }),

    /** A no-op for appointments not made from a calendar. */
    updateBookingQuestions: (appointmentId: number, body: AppointmentBookingQuestionsBody) =>
      t.call('appointments.updateBookingQuestions', {
        params: { appointment_id: appointmentId },
        body,
        // The schema's catchall cannot be expressed beside custom_questions in its inferred type.
        bodySchema:
          appointmentBookingQuestionsBodySchema as z.ZodType<AppointmentBookingQuestionsBody>,
        responseSchema: okSchema,
      }),
  };
}
