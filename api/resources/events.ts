import type { Transport } from '../transport.js';
import { paginate, type Page, type PagingOptions } from '../paging.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  createEventBodySchema,
  eventAutocompleteSchema,
  eventBookingListQuerySchema,
  eventBookingSchema,
  eventSchema,
  type CreateEventBody,
  type EventBooking,
  type EventBookingListQuery,
} from '../schemas/events.js';

/** Events: fetch one, create a proposal or a confirmed booking (optionally from a lead). */
export function eventsResource(t: Transport) {
  return {
    get: (eventId: number) =>
      t.call('events.get', {
        params: { event_id: eventId },
        responseSchema: singleSchema(eventSchema),
      }),

    /** Dates in quick_event_bookings_attributes are MM-DD-YYYY, times 12-hour (see values.toMdy/toTime12). */
    create: (body: CreateEventBody) =>
      t.call('events.create', {
        body,
        bodySchema: createEventBodySchema,
        responseSchema: singleSchema(eventAutocompleteSchema),
      }),
  };
}

const bookingList = listSchema(eventBookingSchema);

/** Event bookings: the package selections inside events. */
export function eventBookingsResource(t: Transport) {
  return {
    get: (eventBookingId: number) =>
      t.call('eventBookings.get', {
        params: { event_booking_id: eventBookingId },
        responseSchema: singleSchema(eventBookingSchema),
      }),

    /** One page; prefer `pages()` to read everything. */
    list: (query: EventBookingListQuery = {}) =>
      t.call('eventBookings.list', {
        query,
        querySchema: eventBookingListQuerySchema,
        responseSchema: bookingList,
      }),

    pages: (
      query: EventBookingListQuery = {},
      options: PagingOptions = {},
    ): AsyncGenerator<Page<EventBooking>> =>
      paginate(
        'eventBookings.list',
        (page, per) =>
          t.call('eventBookings.list', {
            query: { ...query, page, per },
            querySchema: eventBookingListQuerySchema,
            responseSchema: bookingList,
          }),
        options,
      ),

    count: async (query: EventBookingListQuery = {}): Promise<number> => {
      const body = await t.call('eventBookings.list', {
        query: { ...query, page: 1, per: 1 },
        querySchema: eventBookingListQuerySchema,
        responseSchema: bookingList,
      });
      return body.meta.total_count ?? body.data.length;
    },
  };
}

/** Event notes: only deletion is an API operation, and only the author may do it. */
export function eventNotesResource(t: Transport) {
  return {
    delete: (eventId: number, noteId: number) =>
      t.call('eventNotes.delete', {
        params: { event_id: eventId, id: noteId },
        responseSchema: okSchema,
      }),
  };
}
