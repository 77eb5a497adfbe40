import { LEAD_BOOKING_INCLUDES, type LeadBookingInclude } from '../../api/schemas/lead-bookings.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import type { StoredRecord } from '../db.js';
import { listBody, ok, paging, parseInclude, reachWindow, sideload, single } from '../envelope.js';
import { notFound } from '../errors.js';
import { addDays, ymdOf } from '../time.js';
import type { LeadAttrs } from './leads-model.js';
import { getBackdrop } from './offerings.js';
import { BodyFields, MAX_QUANTITY } from '../body-fields.js';
import type { LeadBookingAttrs, LeadAddOnAttrs } from './lead-bookings-model.js';
import { readLeadBookingInput } from './lead-bookings-input.js';
import { type IndexFilter, pageOfRecords } from './lead-index.js';
import { addLeadBooking, updateLeadBooking, touchLead } from './lead-bookings.js';
import {
  LeadView,
  bookingChildren,
  leadBookingItem,
  leadAddOnItem,
  leadBookingIncluded,
} from './lead-bookings-view.js';
import { queryDate, queryId } from '../query-params.js';

/** The lead-booking routes (joined into the lead routes). */

function getBooking(
  ctx: SandboxContext,
  businessId: number,
  params: Record<string, string>,
): StoredRecord<LeadBookingAttrs> {
  const id = Number(params.lead_booking_id);
  const record = ctx.records.get<LeadBookingAttrs>('lead_booking', businessId, id);
  if (!record) throw notFound('Lead booking', id);
  return record;
}

function bookingBody(
  view: LeadView,
  record: StoredRecord<LeadBookingAttrs>,
  include: Set<LeadBookingInclude>,
) {
  const children = bookingChildren(view.ctx, [record]);
  return single(
    leadBookingItem(view, record, children),
    sideload(include, () => leadBookingIncluded(view, [record], include, children)),
  );
}

function listLeadBookings(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const include = parseInclude(query.include, LEAD_BOOKING_INCLUDES);
  const start = queryDate(query, 'event_date_start');
  const end = queryDate(query, 'event_date_end');
  const brandId = queryId(query, 'brand_id');
  const filters: IndexFilter[] = [];
  if (start !== undefined) filters.push({ where: 'starts_at >= ?', params: [ymdOf(start)] });
  if (end !== undefined) {
    // starts_at is local time with an offset, so its date part compares as the local date.
    filters.push({ where: 'starts_at < ?', params: [ymdOf(addDays(end, 1))] });
  }
  if (brandId !== undefined) filters.push({ where: 'brand_id = ?', params: [brandId] });
  const p = paging(query, ctx.limits);
  const { records, total } = pageOfRecords<LeadBookingAttrs>(
    ctx,
    'lead_booking',
    caller.businessId,
    filters,
    reachWindow(p, ctx.limits),
  );
  const view = LeadView.of(ctx, caller);
  const children = bookingChildren(ctx, records);
  return listBody(
    records.map((r) => leadBookingItem(view, r, children)),
    total,
    p,
    sideload(include, () => leadBookingIncluded(view, records, include, children)),
  );
}

export function leadBookingsHandlers(): Handlers {
  return {
    'leadBookings.list': ({ ctx, caller, query }) => listLeadBookings(ctx, caller, query),

    'leadBookings.get': ({ ctx, caller, params, query }) => {
      const include = parseInclude(query.include, LEAD_BOOKING_INCLUDES);
      const record = getBooking(ctx, caller.businessId, params);
      return bookingBody(LeadView.of(ctx, caller), record, include);
    },

    'leadBookings.update': ({ ctx, caller, params, body }) => {
      const record = getBooking(ctx, caller.businessId, params);
      const input = readLeadBookingInput(ctx, caller.businessId, body as Record<string, unknown>);
      const updated = updateLeadBooking(ctx, record, input);
      return bookingBody(LeadView.of(ctx, caller), updated, new Set());
    },

    'leadBookings.remove': ({ ctx, caller, params }) => {
      const record = getBooking(ctx, caller.businessId, params);
      ctx.records.softDelete(record, ctx.clock.iso());
      touchLead(ctx, record.businessId, record.attrs.lead_id);
      return ok();
    },

    'leadBookings.addToLead': ({ ctx, caller, params, body }) => {
      const leadId = Number(params.lead_id);
      const lead = ctx.records.get<LeadAttrs>('lead', caller.businessId, leadId);
      if (!lead) throw notFound('Lead', leadId);
      const input = readLeadBookingInput(ctx, caller.businessId, body as Record<string, unknown>);
      const record = addLeadBooking(ctx, lead, input, { touchLead: true });
      return bookingBody(LeadView.of(ctx, caller), record, new Set());
    },

    'leadBookings.addAddOn': ({ ctx, caller, params, body }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      const f = new BodyFields(body as Record<string, unknown>);
      const addOnId = f.integer('add_on_id');
      const quantity = f.integer('quantity', 1, MAX_QUANTITY) ?? 1;
      if (addOnId === null || (addOnId === undefined && !f.sent('add_on_id'))) {
        f.errors.add('add_on_id', "can't be blank");
      }
      const addOn =
        typeof addOnId === 'number'
          ? ctx.records.get('add_on', caller.businessId, addOnId)
          : undefined;
      if (typeof addOnId === 'number' && !addOn) f.errors.add('add_on_id', 'must exist');
      f.errors.throwIfAny();
      if (!addOn) throw new Error('unreachable: add-on checked above');
      // The same add-on again adds to the quantity rather than making a second line.
      const existing = ctx.records
        .children<LeadAddOnAttrs>('lead_add_on', booking.id)
        .find((r) => r.attrs.add_on_id === addOn.id);
      if (existing && existing.attrs.quantity + quantity > MAX_QUANTITY) {
        f.errors.add(
          'quantity',
          `would make ${existing.attrs.quantity + quantity} of this add-on, and it may be at most ${MAX_QUANTITY} on one line (${existing.attrs.quantity} there now)`,
        );
        f.errors.throwIfAny();
      }
      const record = existing
        ? ctx.records.update(existing, { quantity: existing.attrs.quantity + quantity })
        : ctx.records.insert<LeadAddOnAttrs>(
            'lead_add_on',
            caller.businessId,
            (id) => ({
              id,
              lead_booking_id: booking.id,
              add_on_id: addOn.id,
              name: typeof addOn.attrs.name === 'string' ? addOn.attrs.name : '',
              quantity,
              price_cents:
                typeof addOn.attrs.price_cents === 'number' ? addOn.attrs.price_cents : 0,
            }),
            { parentId: booking.id },
          );
      ctx.records.update(booking, {});
      return single(leadAddOnItem(LeadView.of(ctx, caller), record));
    },

    'leadBookings.setBackdrop': ({ ctx, caller, params, body }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      const f = new BodyFields(body as Record<string, unknown>);
      const backdropId = f.integer('photobooth_background_id');
      if (
        backdropId === null ||
        (backdropId === undefined && !f.sent('photobooth_background_id'))
      ) {
        f.errors.add('photobooth_background_id', "can't be blank");
      }
      if (
        typeof backdropId === 'number' &&
        !getBackdrop(ctx.records, caller.businessId, backdropId)
      ) {
        f.errors.add('photobooth_background_id', 'must exist');
      }
      f.errors.throwIfAny();
      const updated = ctx.records.update(booking, {
        photobooth_background_id: backdropId ?? null,
      });
      return bookingBody(LeadView.of(ctx, caller), updated, new Set(['photobooth_background']));
    },

    'leadBookings.removeBackdrop': ({ ctx, caller, params }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      if (booking.attrs.photobooth_background_id !== null) {
        ctx.records.update(booking, { photobooth_background_id: null });
      }
      return ok();
    },
  };
}
