import type { Caller } from '../auth.js';
import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import { listBody, paging, listPage, single, type Item } from '../envelope.js';
import { badRequest, notFound } from '../errors.js';
import { addDays, businessTimeZone, fromZoned, type DateParts } from '../time.js';
import {
  type EventAttrs,
  type EventBookingAttrs,
  getEvent,
  canSeeEvent,
  findVisibleEvent,
} from './events-model.js';
import { eventItem, eventBookingItem, eventAutocompleteItem } from './events-view.js';
import { createEvent } from './events.js';
import { queryDate } from '../query-params.js';

/** The event and event-booking routes. */

function visibleBooking(
  ctx: SandboxContext,
  caller: Caller,
  id: string | undefined,
): { booking: StoredRecord<EventBookingAttrs>; event: StoredRecord<EventAttrs> } {
  const booking = ctx.records.get<EventBookingAttrs>(
    'event_booking',
    caller.businessId,
    Number(id),
  );
  const event = booking ? getEvent(ctx, caller.businessId, booking.attrs.event_id) : undefined;
  if (!booking || !event || !canSeeEvent(caller, event)) throw notFound('Event booking', id ?? '');
  return { booking, event };
}

export function eventsHandlers(): Handlers {
  return {
    'events.get': ({ ctx, caller, params }) =>
      single(eventItem(ctx, findVisibleEvent(ctx, caller, params.event_id), caller)),

    'events.create': ({ ctx, caller, body }) => {
      const event = createEvent(ctx, caller.businessId, body as Record<string, unknown>);
      return single(eventAutocompleteItem(ctx, event));
    },

    'eventBookings.get': ({ ctx, caller, params }) => {
      const { booking, event } = visibleBooking(ctx, caller, params.event_booking_id);
      return single(eventBookingItem(ctx, booking, event, caller));
    },

    'eventBookings.list': ({ ctx, caller, query }) => {
      const tz = businessTimeZone(ctx.db, caller.businessId);
      const start = queryDate(query, 'event_date_start');
      const end = queryDate(query, 'event_date_end');
      const conditions = [
        `parent_id IN (SELECT e.id FROM records e WHERE e.type = 'event' AND e.business_id = ? AND e.deleted_at IS NULL${
          caller.permissions.has('unassigned_event_read')
            ? ''
            : " AND EXISTS (SELECT 1 FROM json_each(e.attrs, '$.assigned_staff_ids') s WHERE s.value = ?)"
        })`,
      ];
      const params: unknown[] = [caller.businessId];
      if (!caller.permissions.has('unassigned_event_read')) params.push(caller.userId);
      if (start) {
        conditions.push("json_extract(attrs, '$.starts_at') >= ?");
        params.push(new Date(fromZoned(start, 0, tz)).toISOString());
      }
      if (end) {
        if (start && ymdOf(end) < ymdOf(start)) {
          throw badRequest(
            'invalid_parameter',
            'event_date_end must not be before event_date_start',
          );
        }
        conditions.push("json_extract(attrs, '$.starts_at') < ?");
        params.push(new Date(fromZoned(addDays(end, 1), 0, tz)).toISOString());
      }
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<EventBookingAttrs>(
        ctx,
        p,
        'event_booking',
        caller.businessId,
        {
          where: conditions.join(' AND '),
          params,
          orderBy: "json_extract(attrs, '$.starts_at'), id",
        },
      );
      const events = new Map<number, StoredRecord<EventAttrs>>();
      const data: Item[] = [];
      for (const booking of records) {
        let event = events.get(booking.attrs.event_id);
        if (!event) {
          event = getEvent(ctx, caller.businessId, booking.attrs.event_id);
          if (!event) continue;
          events.set(event.id, event);
        }
        data.push(eventBookingItem(ctx, booking, event, caller));
      }
      return listBody(data, total, p);
    },
  };
}

function ymdOf(d: DateParts): string {
  return `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;
}
