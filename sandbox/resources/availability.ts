import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import { badRequest, FieldErrors, notFound } from '../errors.js';
import { MAX_LENGTH_MINUTES } from '../body-fields.js';
import {
  addDays,
  businessTimeZone,
  fromZoned,
  parseMdy,
  dateForm,
  parseTime12,
  parseYmd,
  time12,
  ymd,
  zonedIso,
  type DateParts,
} from '../time.js';
import { getAddOn } from './add-ons.js';
import { createAppointmentCalendar } from './appointments.js';
import type { CalendarAttrs } from './appointments-model.js';
import { heldBookings, type HeldBooking } from './events-model.js';
import { getBackdrop, getPackage, type PackageAttrs } from './offerings.js';
import { malformedParam, queryDate, queryEnum, queryId, queryParam } from '../query-params.js';

/**
 * Availability, computed on every call from what holds inventory: event bookings of live
 * events that are confirmed or date-reserved proposals and neither canceled nor postponed
 * (see heldBookings), plus, for staff, their appointments.
 *
 * Reads record types built elsewhere:
 * - 'appointment': { user_id, user_appointment_calendar_id, starts_at, ends_at (ISO), canceled }
 * - 'appointment_calendar': CalendarAttrs of the appointments module (made by its
 *   createAppointmentCalendar, here through ensureDefaultCalendar).
 *
 * Missing required query parameters answer 422 naming each one; malformed ones answer 400.
 */
export type InventoryStatus = 'available' | 'partially_available' | 'fully_booked';

/** Time-slot starts offered for a package: every half hour from 8:00 AM to 10:00 PM. */
const SLOT_FIRST_MINUTE = 8 * 60;
const SLOT_LAST_MINUTE = 22 * 60;
const SLOT_STEP_MINUTES = 30;
/** Longest date range the date check accepts. */
const MAX_RANGE_DAYS = 366;

export function ensureDefaultCalendar(
  ctx: SandboxContext,
  businessId: number,
  userId: number,
): StoredRecord<CalendarAttrs> {
  const { records } = ctx.records.list<CalendarAttrs>('appointment_calendar', businessId, {
    where: "json_extract(attrs, '$.user_id') = ?",
    params: [userId],
    limit: 1,
  });
  return (
    records[0] ?? createAppointmentCalendar(ctx, businessId, { user_id: userId, name: 'Meetings' })
  );
}

/* ------------------------------------------------------------------ query parsing */

function required<T>(errors: FieldErrors, name: string, value: T | undefined): T | undefined {
  if (value === undefined) errors.add(name, "can't be blank");
  return value;
}

function dayIndex(d: DateParts): number {
  return Date.UTC(d.year, d.month - 1, d.day) / 86_400_000;
}

/** ISO 8601 date-time; without an offset it is read in the business time zone. */
function isoParam(query: Record<string, unknown>, name: string, tz: string): number | undefined {
  const value = queryParam(query, name);
  if (value === undefined) return undefined;
  const m =
    /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(
      value.trim(),
    );
  if (!m) return malformedParam(name, 'an ISO 8601 date-time', value);
  if (m[7]) {
    const ms = Date.parse(m[0].replace(' ', 'T'));
    return Number.isFinite(ms) ? ms : malformedParam(name, 'an ISO 8601 date-time', value);
  }
  const date = parseYmd(`${m[1]}-${m[2]}-${m[3]}`);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  if (!date || hour > 23 || minute > 59)
    return malformedParam(name, 'an ISO 8601 date-time', value);
  return fromZoned(date, hour * 60 + minute, tz);
}

function findPackage(ctx: SandboxContext, businessId: number, id: number) {
  const pkg = getPackage(ctx.records, businessId, id);
  if (!pkg) throw notFound('Package', id);
  return pkg;
}

function statusOf(booked: number, quantity: number): InventoryStatus {
  if (booked <= 0) return 'available';
  return booked >= quantity ? 'fully_booked' : 'partially_available';
}

/* ------------------------------------------------------------------ date check */

interface PackageInventory {
  package_id: number;
  package_name: string;
  status: InventoryStatus;
  quantity_available: number;
  /** Most bookings of the package on any one day of the range. */
  quantity_booked: number;
  quantity_remaining: number;
}

function packageInventory(
  pkg: StoredRecord<PackageAttrs>,
  days: { held: HeldBooking[] }[],
): PackageInventory {
  const quantity = pkg.attrs.quantity_available;
  const perDay = days.map(
    (d) => d.held.filter((h) => h.booking.attrs.event_type_id === pkg.id).length,
  );
  const most = Math.max(0, ...perDay);
  const status: InventoryStatus =
    most === 0
      ? 'available'
      : perDay.every((n) => n >= quantity)
        ? 'fully_booked'
        : 'partially_available';
  return {
    package_id: pkg.id,
    package_name: pkg.attrs.name,
    status,
    quantity_available: quantity,
    quantity_booked: most,
    quantity_remaining: Math.max(0, quantity - most),
  };
}

function checkDates(ctx: SandboxContext, businessId: number, query: Record<string, unknown>) {
  const tz = businessTimeZone(ctx.db, businessId);
  const errors = new FieldErrors();
  const eventDate = queryDate(query, 'event_date');
  let start = eventDate;
  let end = eventDate;
  if (!eventDate) {
    start = queryDate(query, 'starts_at');
    end = queryDate(query, 'ends_at');
    if (!start && !end) errors.add('event_date', "can't be blank (or send starts_at and ends_at)");
    else {
      required(errors, 'starts_at', start);
      required(errors, 'ends_at', end);
    }
  }
  const packageId = queryId(query, 'package_id');
  errors.throwIfAny();
  if (!start || !end) throw new Error('unreachable: dates validated above');
  const span = dayIndex(end) - dayIndex(start) + 1;
  if (span < 1) throw badRequest('invalid_parameter', 'ends_at must not be before starts_at');
  if (span > MAX_RANGE_DAYS) {
    throw badRequest('invalid_parameter', `the range may cover at most ${MAX_RANGE_DAYS} days`);
  }

  const packages =
    packageId !== undefined
      ? [findPackage(ctx, businessId, packageId)]
      : ctx.records.list<PackageAttrs>('package', businessId, {
          orderBy: "json_extract(attrs, '$.position'), id",
        }).records;
  const days: { held: HeldBooking[] }[] = [];
  for (let i = 0; i < span; i += 1) {
    const day = addDays(start, i);
    days.push({
      held: heldBookings(ctx, businessId, fromZoned(day, 0, tz), fromZoned(addDays(day, 1), 0, tz)),
    });
  }
  const inventories = packages.map((p) => packageInventory(p, days));
  const quantity = inventories.reduce((n, p) => n + p.quantity_available, 0);
  const remaining = inventories.reduce((n, p) => n + p.quantity_remaining, 0);
  const status: InventoryStatus =
    inventories.length === 0 || inventories.every((p) => p.status === 'available')
      ? 'available'
      : inventories.every((p) => p.status === 'fully_booked')
        ? 'fully_booked'
        : 'partially_available';
  const iso = (d: DateParts) => ymd(fromZoned(d, 12 * 60, tz), tz);
  return {
    meta: { status: 'ok' },
    data: {
      status,
      available: status !== 'fully_booked',
      starts_at: iso(start),
      ends_at: iso(end),
      package_id: packageId ?? null,
      quantity_available: quantity,
      quantity_booked: inventories.reduce((n, p) => n + p.quantity_booked, 0),
      quantity_remaining: remaining,
      packages: inventories,
    },
  };
}

/* ------------------------------------------------------------------ detailed check */

const LOOKUP_TYPES = ['all', 'package', 'add_on', 'backdrop', 'staff'] as const;
type LookupType = (typeof LOOKUP_TYPES)[number];

interface AppointmentAttrs extends Record<string, unknown> {
  user_id?: unknown;
  starts_at?: unknown;
  ends_at?: unknown;
  canceled?: unknown;
}

/** Live, not canceled appointments of a user overlapping [startMs, endMs). */
function userAppointments(
  ctx: SandboxContext,
  businessId: number,
  userId: number,
  startMs: number,
  endMs: number,
): { startMs: number; endMs: number }[] {
  const { records } = ctx.records.list<AppointmentAttrs>('appointment', businessId, {
    where: "json_extract(attrs, '$.user_id') = ?",
    params: [userId],
  });
  return records
    .filter((r) => r.attrs.canceled !== true)
    .map((r) => ({
      startMs: typeof r.attrs.starts_at === 'string' ? Date.parse(r.attrs.starts_at) : NaN,
      endMs: typeof r.attrs.ends_at === 'string' ? Date.parse(r.attrs.ends_at) : NaN,
    }))
    .filter((a) => a.startMs < endMs && a.endMs > startMs);
}

function userName(ctx: SandboxContext, businessId: number, id: number): string {
  const row = ctx.db
    .prepare('SELECT name FROM users WHERE id = ? AND business_id = ?')
    .get(id, businessId) as { name: string } | undefined;
  if (!row) throw notFound('User', id);
  return row.name;
}

function detailedWindow(
  ctx: SandboxContext,
  businessId: number,
  query: Record<string, unknown>,
  pkg: StoredRecord<PackageAttrs> | undefined,
): { startMs: number; endMs: number } {
  const tz = businessTimeZone(ctx.db, businessId);
  const errors = new FieldErrors();
  const isoStart = isoParam(query, 'starts_at', tz);
  const isoEnd = isoParam(query, 'ends_at', tz);
  if (isoStart !== undefined || isoEnd !== undefined) {
    required(errors, 'starts_at', isoStart);
    required(errors, 'ends_at', isoEnd);
    errors.throwIfAny();
    if (isoStart === undefined || isoEnd === undefined) throw new Error('unreachable');
    if (isoEnd <= isoStart) errors.add('ends_at', 'must be after starts_at').throwIfAny();
    return { startMs: isoStart, endMs: isoEnd };
  }
  const dateValue = queryParam(query, 'starts_at_date');
  if (dateValue === undefined) {
    errors.add('starts_at', "can't be blank (send starts_at and ends_at, or starts_at_date)");
    errors.throwIfAny();
    throw new Error('unreachable');
  }
  const date =
    parseYmd(dateValue) ??
    parseMdy(dateValue) ??
    malformedParam('starts_at_date', dateForm('YYYY-MM-DD'), dateValue);
  const startText = queryParam(query, 'starts_at_time');
  const endText = queryParam(query, 'ends_at_time');
  // A date alone asks about the whole day.
  if (startText === undefined && endText === undefined) {
    return { startMs: fromZoned(date, 0, tz), endMs: fromZoned(addDays(date, 1), 0, tz) };
  }
  if (startText === undefined) {
    errors.add('starts_at_time', "can't be blank").throwIfAny();
    throw new Error('unreachable');
  }
  const startMinutes =
    parseTime12(startText) ?? malformedParam('starts_at_time', 'a time like 2:00 PM', startText);
  const startMs = fromZoned(date, startMinutes, tz);
  if (endText === undefined) {
    if (!pkg) errors.add('ends_at_time', "can't be blank (or send package_id)").throwIfAny();
    return { startMs, endMs: startMs + (pkg?.attrs.default_length_in_minutes ?? 60) * 60_000 };
  }
  const endMinutes =
    parseTime12(endText) ?? malformedParam('ends_at_time', 'a time like 6:00 PM', endText);
  let endMs = fromZoned(date, endMinutes, tz);
  if (endMs <= startMs) endMs = fromZoned(date, endMinutes + 1440, tz);
  return { startMs, endMs };
}

function checkDetailed(ctx: SandboxContext, businessId: number, query: Record<string, unknown>) {
  const tz = businessTimeZone(ctx.db, businessId);
  const lookup: LookupType = queryEnum(query, 'lookup_type', LOOKUP_TYPES) ?? 'all';
  const ids = {
    package: queryId(query, 'package_id'),
    add_on: queryId(query, 'add_on_id'),
    backdrop: queryId(query, 'backdrop_id'),
    staff: queryId(query, 'staff_id'),
  };
  const quantity = queryId(query, 'quantity') ?? 1;
  if (lookup !== 'all' && ids[lookup] === undefined) {
    new FieldErrors().add(`${lookup}_id`, "can't be blank").throwIfAny();
  }
  const wants = (type: Exclude<LookupType, 'all'>) =>
    ids[type] !== undefined && (lookup === 'all' || lookup === type);

  const pkg = ids.package !== undefined ? findPackage(ctx, businessId, ids.package) : undefined;
  const { startMs, endMs } = detailedWindow(ctx, businessId, query, pkg);
  const held = heldBookings(ctx, businessId, startMs, endMs);
  const messages: string[] = [];
  const conflicts = new Set<HeldBooking>();
  let available = true;

  const capacity = (label: string, matches: HeldBooking[], limit: number | null) => {
    for (const m of matches) conflicts.add(m);
    if (limit === null) return;
    if (matches.length + quantity > limit) {
      available = false;
      messages.push(
        `${label} is not available at this time (${matches.length} of ${limit} booked, ${quantity} requested)`,
      );
    } else if (matches.length > 0) {
      messages.push(`${label}: ${limit - matches.length} of ${limit} still available`);
    }
  };

  if (pkg && wants('package')) {
    capacity(
      pkg.attrs.name,
      held.filter((h) => h.booking.attrs.event_type_id === pkg.id),
      pkg.attrs.quantity_available,
    );
  }
  if (wants('add_on') && ids.add_on !== undefined) {
    const addOnId = ids.add_on;
    const addOn = getAddOn(ctx, businessId, addOnId);
    if (!addOn) throw notFound('Add-on', addOnId);
    capacity(
      addOn.attrs.name,
      held.filter((h) => h.booking.attrs.add_on_ids.includes(addOnId)),
      addOn.attrs.quantity_available,
    );
  }
  if (wants('backdrop') && ids.backdrop !== undefined) {
    const backdropId = ids.backdrop;
    const backdrop = getBackdrop(ctx.records, businessId, backdropId);
    if (!backdrop) throw notFound('Backdrop', backdropId);
    // A backdrop is one physical item.
    capacity(
      backdrop.attrs.name,
      held.filter((h) => h.booking.attrs.backdrop_id === backdropId),
      1,
    );
  }
  if (wants('staff') && ids.staff !== undefined) {
    const staffId = ids.staff;
    const name = userName(ctx, businessId, staffId);
    const assigned = held.filter((h) => h.event.attrs.assigned_staff_ids.includes(staffId));
    for (const a of assigned) conflicts.add(a);
    if (assigned.length > 0) {
      available = false;
      messages.push(`${name} is assigned to another event at this time`);
    }
    if (userAppointments(ctx, businessId, staffId, startMs, endMs).length > 0) {
      available = false;
      messages.push(`${name} has an appointment at this time`);
    }
  }
  if (lookup === 'all' && Object.values(ids).every((v) => v === undefined)) {
    for (const h of held) conflicts.add(h);
  }

  return {
    meta: { status: 'ok' },
    available,
    messages,
    overlapping_bookings: [...conflicts].map(({ booking, event }) => ({
      id: booking.id,
      type: 'event_booking',
      event_id: event.id,
      event_title: event.attrs.title,
      event_type_id: booking.attrs.event_type_id,
      name: booking.attrs.name,
      status: event.attrs.status,
      starts_at: zonedIso(Date.parse(booking.attrs.starts_at), tz),
      ends_at: zonedIso(Date.parse(booking.attrs.ends_at), tz),
    })),
  };
}

/* ------------------------------------------------------------------ slots */

function timeSlots(ctx: SandboxContext, businessId: number, query: Record<string, unknown>) {
  const tz = businessTimeZone(ctx.db, businessId);
  const errors = new FieldErrors();
  const date = required(errors, 'event_date', queryDate(query, 'event_date'));
  const packageId = required(errors, 'package_id', queryId(query, 'package_id'));
  const length = queryId(query, 'length_in_minutes');
  if (length !== undefined && length > MAX_LENGTH_MINUTES) {
    malformedParam('length_in_minutes', `at most ${MAX_LENGTH_MINUTES} (a year)`, String(length));
  }
  errors.throwIfAny();
  if (!date || packageId === undefined) throw new Error('unreachable');
  const pkg = findPackage(ctx, businessId, packageId);
  const minutes = length ?? pkg.attrs.default_length_in_minutes;
  const quantity = pkg.attrs.quantity_available;
  const dayStart = fromZoned(date, 0, tz);
  const held = heldBookings(
    ctx,
    businessId,
    dayStart,
    fromZoned(date, SLOT_LAST_MINUTE + minutes, tz),
  ).filter((h) => h.booking.attrs.event_type_id === pkg.id);
  const data = [];
  for (let m = SLOT_FIRST_MINUTE; m <= SLOT_LAST_MINUTE; m += SLOT_STEP_MINUTES) {
    const startMs = fromZoned(date, m, tz);
    const endMs = startMs + minutes * 60_000;
    const booked = held.filter(
      (h) =>
        Date.parse(h.booking.attrs.starts_at) < endMs &&
        Date.parse(h.booking.attrs.ends_at) > startMs,
    ).length;
    data.push({
      starts_at: zonedIso(startMs, tz),
      ends_at: zonedIso(endMs, tz),
      status: statusOf(booked, quantity),
      display_name: `${time12(startMs, tz)} - ${time12(endMs, tz)}`,
    });
  }
  return { meta: { status: 'ok' }, data };
}

function hhmm(text: string, fallback: number): number {
  const m = /^(\d{1,2}):(\d{2})$/.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : fallback;
}

function appointmentSlots(ctx: SandboxContext, businessId: number, query: Record<string, unknown>) {
  const tz = businessTimeZone(ctx.db, businessId);
  const errors = new FieldErrors();
  const userId = required(errors, 'user_id', queryId(query, 'user_id'));
  const calendarId = required(
    errors,
    'user_appointment_calendar_id',
    queryId(query, 'user_appointment_calendar_id'),
  );
  const date = required(errors, 'selected_date', queryDate(query, 'selected_date'));
  errors.throwIfAny();
  if (userId === undefined || calendarId === undefined || !date) throw new Error('unreachable');
  userName(ctx, businessId, userId);
  const calendar = ctx.records.get<CalendarAttrs>('appointment_calendar', businessId, calendarId);
  if (!calendar || calendar.attrs.user_id !== userId) {
    throw notFound('Appointment calendar', calendarId);
  }
  const step = Math.max(5, calendar.attrs.slot_length_in_minutes || 30);
  const first = hhmm(calendar.attrs.day_start, 9 * 60);
  const last = hhmm(calendar.attrs.day_end, 17 * 60);
  const dayStart = fromZoned(date, 0, tz);
  const dayEnd = fromZoned(addDays(date, 1), 0, tz);
  const busy = [
    ...userAppointments(ctx, businessId, userId, dayStart, dayEnd),
    ...heldBookings(ctx, businessId, dayStart, dayEnd)
      .filter((h) => h.event.attrs.assigned_staff_ids.includes(userId))
      .map((h) => ({
        startMs: Date.parse(h.booking.attrs.starts_at),
        endMs: Date.parse(h.booking.attrs.ends_at),
      })),
  ];
  const data = [];
  for (let m = first; m + step <= last; m += step) {
    const startMs = fromZoned(date, m, tz);
    const endMs = fromZoned(date, m + step, tz);
    const booked = busy.some((b) => b.startMs < endMs && b.endMs > startMs);
    data.push({
      starts_at: zonedIso(startMs, tz),
      ends_at: zonedIso(endMs, tz),
      status: booked ? 'booked' : 'available',
      display_name: time12(startMs, tz),
    });
  }
  return { meta: { status: 'ok' }, data };
}

export function availabilityHandlers(): Handlers {
  return {
    'availability.check': ({ ctx, caller, query }) => checkDates(ctx, caller.businessId, query),
    'availability.detailed': ({ ctx, caller, query }) =>
      checkDetailed(ctx, caller.businessId, query),
    'availability.timeSlots': ({ ctx, caller, query }) => timeSlots(ctx, caller.businessId, query),
    'availability.appointmentSlots': ({ ctx, caller, query }) =>
      appointmentSlots(ctx, caller.businessId, query),
  };
}
