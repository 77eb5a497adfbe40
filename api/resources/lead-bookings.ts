import { z } from 'zod';
import type { Transport } from '../transport.js';
import { paginate, type Page, type PagingOptions } from '../paging.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  addLeadAddOnBodySchema,
  leadAddOnSchema,
  leadBookingBodySchema,
  leadBookingIncludeSchema,
  leadBookingListQuerySchema,
  leadBookingSchema,
  setBackdropBodySchema,
  type AddLeadAddOnBody,
  type LeadBooking,
  type LeadBookingBody,
  type LeadBookingInclude,
  type LeadBookingListQuery,
  type SetBackdropBody,
} from '../schemas/lead-bookings.js';

const bookingList = listSchema(leadBookingSchema);
const bookingSingle = singleSchema(leadBookingSchema);
const includeQuery = z.strictObject({ include: leadBookingIncludeSchema.optional() });
/** "Set backdrop" answers with a body the spec does not detail: the envelope, data optional. */
const backdropAnswer = z.looseObject({
  meta: z.looseObject({ status: z.string() }),
  data: z.unknown().optional(),
});

function includeOf(include: readonly LeadBookingInclude[] | undefined): { include?: string } {
  return include && include.length > 0 ? { include: include.join(',') } : {};
}

/** Lead bookings: the package and date selections of leads. */
export function leadBookingsResource(t: Transport) {
  return {
    /** One page; prefer `pages()` to read everything. */
    list: (query: LeadBookingListQuery = {}) =>
      t.call('leadBookings.list', {
        query,
        querySchema: leadBookingListQuerySchema,
        responseSchema: bookingList,
      }),

    pages: (
      query: LeadBookingListQuery = {},
      options: PagingOptions = {},
    ): AsyncGenerator<Page<LeadBooking>> =>
      paginate(
        'leadBookings.list',
        (page, per) =>
          t.call('leadBookings.list', {
            query: { ...query, page, per },
            querySchema: leadBookingListQuerySchema,
            responseSchema: bookingList,
          }),
        options,
      ),

    count: async (query: LeadBookingListQuery = {}): Promise<number> => {
      const body = await t.call('leadBookings.list', {
        query: { ...query, page: 1, per: 1 },
        querySchema: leadBookingListQuerySchema,
        responseSchema: bookingList,
      });
      return body.meta.total_count ?? body.data.length;
    },

    get: (leadBookingId: number, include?: readonly LeadBookingInclude[]) =>
      t.call('leadBookings.get', {
        params: { lead_booking_id: leadBookingId },
        query: includeOf(include),
        querySchema: includeQuery,
        responseSchema: bookingSingle,
      }),

    /** Only the fields sent change; `staff_id: ''` clears the staff member. */
    update: (leadBookingId: number, body: LeadBookingBody) =>
      t.call('leadBookings.update', {
        params: { lead_booking_id: leadBookingId },
        body,
        bodySchema: leadBookingBodySchema,
        responseSchema: bookingSingle,
      }),

    remove: (leadBookingId: number) =>
      t.call('leadBookings.remove', {
        params: { lead_booking_id: leadBookingId },
        responseSchema: okSchema,
      }),

    addToLead: (leadId: number, body: LeadBookingBody) =>
      t.call('leadBookings.addToLead', {
        params: { lead_id: leadId },
        body,
        bodySchema: leadBookingBodySchema,
        responseSchema: bookingSingle,
      }),

    addAddOn: (leadBookingId: number, body: AddLeadAddOnBody) =>
      t.call('leadBookings.addAddOn', {
        params: { lead_booking_id: leadBookingId },
        body,
        bodySchema: addLeadAddOnBodySchema,
        responseSchema: singleSchema(leadAddOnSchema),
      }),

    /** Replaces any existing selection. */
    setBackdrop: (leadBookingId: number, body: SetBackdropBody) =>
      t.call('leadBookings.setBackdrop', {
        params: { lead_booking_id: leadBookingId },
        body,
        bodySchema: setBackdropBodySchema,
        responseSchema: backdropAnswer,
      }),

    removeBackdrop: (leadBookingId: number) =>
      t.call('leadBookings.removeBackdrop', {
        params: { lead_booking_id: leadBookingId },
        responseSchema: okSchema,
      }),
  };
}
