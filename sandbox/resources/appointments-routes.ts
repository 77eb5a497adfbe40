import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { listBody, ok, paging, parseInclude, listPage, sideload, single } from '../envelope.js';
import { FieldErrors } from '../errors.js';
import { queryDate, queryEnum, queryId, queryIdOr, queryText } from '../query-params.js';
import {
  businessTimeZone,
  fromZoned,
  parseTime12,
  parseYmd,
  time12,
  ymd,
  zonedIso,
} from '../time.js';
import {
  type AppointmentAttrs,
  type CalendarAttrs,
  CREATED_VIA,
  type CreatedVia,
  userOf,
  reachesAll,
  loadAppointment,
  calendarOf,
} from './appointments-model.js';
import {
  createAppointment,
  cancelAppointment,
  uncancelAppointment,
  deleteAppointment,
  notify,
} from './appointments.js';
import {
  appointmentItem,
  userAppointmentItems,
  calendarQuestions,
  bookingQuestionItems,
} from './appointments-view.js';
import {
  type Body,
  has,
  optString,
  reqString,
  optInteger,
  readGuests,
  checkEmail,
  readDate,
  readTime,
  readLength,
  checkBrand,
  bodyOf,
  CANCELED_STATUS,
  PAST_OR_FUTURE,
} from './appointments-input.js';

/** The appointment routes: list with its filters, create, read, change, cancel, duplicate. */

function listAppointments(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const businessId = caller.businessId;
  const tz = businessTimeZone(ctx.db, businessId);
  const startDate = queryDate(query, 'start_date');
  const endDate = queryDate(query, 'end_date');
  const staff = queryIdOr(query, 'staff_id', 'my');
  const brandId = queryId(query, 'brand_id');
  const canceled = queryEnum(query, 'canceled_status', CANCELED_STATUS) ?? 'all';
  const when = queryEnum(query, 'past_or_future', PAST_OR_FUTURE) ?? 'all';
  const search = queryText(query, 'search_text')?.toLowerCase();
  const p = paging(query, ctx.limits);

  // starts_at is stored with an offset, so instants are compared through julianday().
  const where: string[] = [];
  const params: unknown[] = [];
  const startsAt = "julianday(json_extract(attrs, '$.starts_at'))";
  if (startDate) {
    where.push(`${startsAt} >= julianday(?)`);
    params.push(new Date(fromZoned(startDate, 0, tz)).toISOString());
  }
  if (endDate) {
    where.push(`${startsAt} < julianday(?)`);
    params.push(new Date(fromZoned(endDate, 24 * 60, tz)).toISOString());
  }
  const staffId = staff === 'my' ? caller.userId : staff;
  if (staffId !== undefined) {
    where.push("json_extract(attrs, '$.user_id') = ?");
    params.push(staffId);
  }
  if (!reachesAll(caller, 'read')) {
    where.push("json_extract(attrs, '$.user_id') = ?");
    params.push(caller.userId);
  }
  if (brandId !== undefined) {
    where.push("json_extract(attrs, '$.brand_id') = ?");
    params.push(brandId);
  }
  if (canceled !== 'all') {
    where.push("json_extract(attrs, '$.canceled') = ?");
    params.push(canceled === 'canceled' ? 1 : 0);
  }
  const nowIso = ctx.clock.iso();
  if (when === 'past') {
    where.push(`${startsAt} < julianday(?)`);
    params.push(nowIso);
  } else if (when === 'future') {
    where.push(`${startsAt} >= julianday(?)`);
    params.push(nowIso);
  }
  if (search) {
    const columns = [
      'guest_name',
      'guest_email',
      'guest_phone',
      'custom_title',
      'location',
      'private_notes',
    ];
    where.push(
      columns
        .map((c) => `instr(lower(coalesce(json_extract(attrs, '$.${c}'), '')), ?) > 0`)
        .join(' OR '),
    );
    params.push(...columns.map(() => search));
  }
  const { records, total } = listPage<AppointmentAttrs>(ctx, p, 'appointment', businessId, {
    ...(where.length > 0 ? { where: where.map((w) => `(${w})`).join(' AND '), params } : {}),
    orderBy: `${startsAt} ${when === 'past' ? 'DESC' : 'ASC'}, id`,
  });
  return listBody(
    records.map((r) => appointmentItem(ctx, r)),
    total,
    p,
  );
}

function appointmentIncludes(query: Record<string, unknown>): ReadonlySet<'user_appointments'> {
  return parseInclude(query.include, ['user_appointments']);
}

function startOf(
  ctx: SandboxContext,
  businessId: number,
  date: { year: number; month: number; day: number },
  minutes: number,
): number {
  return fromZoned(date, minutes, businessTimeZone(ctx.db, businessId));
}

// ---- handlers -----------------------------------------------------------------------------

export function appointmentsHandlers(): Handlers {
  return {
    'appointments.list': ({ ctx, caller, query }) => listAppointments(ctx, caller, query),

    'appointments.create': ({ ctx, caller, body: raw }) => {
      const body = bodyOf(raw);
      const errors = new FieldErrors();
      const guestName = reqString(body, 'guest_name', errors);
      const guestEmail = reqString(body, 'guest_email', errors);
      checkEmail(guestEmail, 'guest_email', errors);
      const guestPhone = optString(body, 'guest_phone', errors);
      const guests = readGuests(body, errors);
      if (
        !has(body, 'starts_at_date') ||
        body.starts_at_date === null ||
        body.starts_at_date === ''
      )
        errors.add('starts_at_date', "can't be blank");
      const date = readDate(body, 'starts_at_date', errors);
      if (
        !has(body, 'starts_at_time') ||
        body.starts_at_time === null ||
        body.starts_at_time === ''
      )
        errors.add('starts_at_time', "can't be blank");
      const time = readTime(body, 'starts_at_time', errors);
      const length = readLength(body, errors);
      if (length === null || (length === undefined && !has(body, 'length_in_minutes')))
        errors.add('length_in_minutes', "can't be blank");
      const location = optString(body, 'location', errors);
      const locationDetails = optString(body, 'location_details', errors);
      const privateNotes = optString(body, 'private_notes', errors);
      const message = optString(body, 'message', errors);
      const customTitle = optString(body, 'custom_title', errors);
      const userId = optInteger(body, 'user_id', errors);
      if (typeof userId === 'number' && !userOf(ctx, caller.businessId, userId))
        errors.add('user_id', 'is not a user of this business');
      const brandId = optInteger(body, 'brand_id', errors);
      checkBrand(ctx, caller.businessId, brandId, errors);
      const calendarId = optInteger(body, 'user_appointment_calendar_id', errors);
      const calendar =
        typeof calendarId === 'number'
          ? ctx.records.get<CalendarAttrs>('appointment_calendar', caller.businessId, calendarId)
          : undefined;
      if (typeof calendarId === 'number' && !calendar)
        errors.add('user_appointment_calendar_id', 'is not a calendar of this business');
      const createdVia = body.created_via;
      if (createdVia === undefined || createdVia === null || createdVia === '')
        errors.add('created_via', "can't be blank");
      else if (!(CREATED_VIA as readonly unknown[]).includes(createdVia))
        errors.add('created_via', `is not included in the list (${CREATED_VIA.join(', ')})`);
      errors.throwIfAny();
      const record = createAppointment(ctx, caller.businessId, {
        guest_name: guestName as string,
        guest_email: guestEmail as string,
        guest_phone: guestPhone ?? null,
        additional_guests: guests ?? [],
        startsAtMs: startOf(ctx, caller.businessId, date!, time!),
        length_in_minutes: length as number,
        location: location ?? null,
        location_details: locationDetails ?? null,
        private_notes: privateNotes ?? null,
        message: message ?? null,
        custom_title: customTitle ?? null,
        // A calendar booking belongs to the calendar's owner unless a user is named.
        user_id: userId ?? calendar?.attrs.user_id ?? caller.userId,
        ...(typeof brandId === 'number' ? { brand_id: brandId } : {}),
        user_appointment_calendar_id: calendar?.id ?? null,
        created_via: createdVia as CreatedVia,
      });
      return single(appointmentItem(ctx, record));
    },

    'appointments.get': ({ ctx, caller, params, query }) => {
      const include = appointmentIncludes(query);
      const record = loadAppointment(ctx, caller, params.id, 'read');
      return single(
        appointmentItem(ctx, record),
        sideload(include, () => userAppointmentItems(ctx, record)),
      );
    },

    'appointments.update': ({ ctx, caller, params, body: raw }) => {
      const record = loadAppointment(ctx, caller, params.id, 'write');
      const body = bodyOf(raw);
      const errors = new FieldErrors();
      const patch: Partial<AppointmentAttrs> = {};
      for (const name of ['guest_name', 'guest_email'] as const) {
        const v = optString(body, name, errors);
        if (v === null) errors.add(name, "can't be blank");
        else if (v !== undefined) patch[name] = v;
      }
      checkEmail(patch.guest_email, 'guest_email', errors);
      for (const name of [
        'guest_phone',
        'location',
        'location_details',
        'private_notes',
        'custom_title',
      ] as const) {
        const v = optString(body, name, errors);
        if (v !== undefined) patch[name] = v;
      }
      const guests = readGuests(body, errors);
      if (guests) patch.additional_guests = guests;
      const date = readDate(body, 'starts_at_date', errors);
      const time = readTime(body, 'starts_at_time', errors);
      for (const name of ['starts_at_date', 'starts_at_time'] as const) {
        if (has(body, name) && (body[name] === null || body[name] === ''))
          errors.add(name, "can't be blank");
      }
      const length = readLength(body, errors);
      if (length === null) errors.add('length_in_minutes', "can't be blank");
      const brandId = optInteger(body, 'brand_id', errors);
      if (brandId === null) errors.add('brand_id', "can't be blank");
      checkBrand(ctx, caller.businessId, brandId, errors);
      errors.throwIfAny();
      if (typeof brandId === 'number') patch.brand_id = brandId;

      const tz = businessTimeZone(ctx.db, record.businessId);
      const oldStart = Date.parse(record.attrs.starts_at);
      if (date || time !== undefined || typeof length === 'number') {
        const startDate = date ?? parseYmd(ymd(oldStart, tz))!;
        const startMinutes = time ?? parseTime12(time12(oldStart, tz))!;
        const start = fromZoned(startDate, startMinutes, tz);
        const minutes = typeof length === 'number' ? length : record.attrs.length_in_minutes;
        patch.length_in_minutes = minutes;
        patch.starts_at = zonedIso(start, tz);
        patch.ends_at = zonedIso(start + minutes * 60_000, tz);
        const moved =
          Date.parse(patch.starts_at) !== oldStart ||
          Date.parse(patch.ends_at) !== Date.parse(record.attrs.ends_at);
        if (moved) patch.notifications_sent = notify(ctx, record, 'rescheduled');
      }
      const updated = ctx.records.update(record, patch);
      return single(appointmentItem(ctx, updated));
    },

    'appointments.delete': ({ ctx, caller, params }) => {
      deleteAppointment(ctx, loadAppointment(ctx, caller, params.id, 'write'));
      return ok();
    },

    'appointments.cancel': ({ ctx, caller, params }) =>
      single(
        appointmentItem(
          ctx,
          cancelAppointment(ctx, loadAppointment(ctx, caller, params.id, 'write')),
        ),
      ),

    'appointments.uncancel': ({ ctx, caller, params }) =>
      single(
        appointmentItem(
          ctx,
          uncancelAppointment(ctx, loadAppointment(ctx, caller, params.id, 'write')),
        ),
      ),

    'appointments.duplicate': ({ ctx, caller, params, body: raw }) => {
      const source = loadAppointment(ctx, caller, params.id, 'write');
      const body = bodyOf(raw);
      const errors = new FieldErrors();
      for (const name of ['starts_at_date', 'starts_at_time'] as const) {
        if (!has(body, name) || body[name] === null || body[name] === '')
          errors.add(name, "can't be blank");
      }
      const date = readDate(body, 'starts_at_date', errors);
      const time = readTime(body, 'starts_at_time', errors);
      errors.throwIfAny();
      const a = source.attrs;
      const copy = createAppointment(ctx, caller.businessId, {
        guest_name: a.guest_name,
        guest_email: a.guest_email,
        guest_phone: a.guest_phone,
        additional_guests: a.additional_guests,
        startsAtMs: startOf(ctx, caller.businessId, date!, time!),
        length_in_minutes: a.length_in_minutes,
        location: a.location,
        location_details: a.location_details,
        private_notes: a.private_notes,
        message: a.message,
        custom_title: a.custom_title,
        user_id: a.user_id,
        brand_id: a.brand_id,
        user_appointment_calendar_id: a.user_appointment_calendar_id,
        created_via: a.created_via,
        event_date: a.event_date,
        venue_name: a.venue_name,
        custom_answers: a.custom_answers,
      });
      return single(appointmentItem(ctx, copy));
    },

    'appointments.bookingQuestions': ({ ctx, caller, params, query }) => {
      const record = loadAppointment(ctx, caller, params.appointment_id, 'read');
      const p = paging(query, ctx.limits);
      const entries = bookingQuestionItems(ctx, record, calendarOf(ctx, record));
      return listBody(entries.slice(p.offset, p.offset + p.per), entries.length, p);
    },

    'appointments.updateBookingQuestions': ({ ctx, caller, params, body: raw }) => {
      const record = loadAppointment(ctx, caller, params.appointment_id, 'write');
      const body = bodyOf(raw);
      const errors = new FieldErrors();
      const custom = body.custom_questions;
      if (custom === undefined || custom === null) errors.add('custom_questions', "can't be blank");
      else if (typeof custom !== 'object' || Array.isArray(custom))
        errors.add('custom_questions', 'must be an object keyed by question column name');
      const answers = (typeof custom === 'object' && custom !== null ? custom : {}) as Body;
      for (const [column, value] of Object.entries(answers)) {
        if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) {
          errors.add('custom_questions', `answer to ${column} must be a string, number or boolean`);
        }
      }
      const phone = optString(body, 'guest_phone', errors);
      const venue = optString(body, 'venue_name', errors);
      const eventDate = readDate(body, 'event_date', errors);
      errors.throwIfAny();
      const calendar = calendarOf(ctx, record);
      // Appointments made without a calendar have no booking questions: nothing to answer.
      if (!calendar) return ok();
      const known = new Set(calendarQuestions(calendar).map((q) => q.column_name));
      const patch: Partial<AppointmentAttrs> = {};
      const merged = { ...record.attrs.custom_answers };
      for (const [column, value] of Object.entries(answers)) {
        if (known.has(column)) merged[column] = value as string | number | boolean | null;
      }
      patch.custom_answers = merged;
      if (phone !== undefined) patch.guest_phone = phone;
      if (venue !== undefined) patch.venue_name = venue;
      if (has(body, 'event_date'))
        patch.event_date = eventDate ? String(body.event_date).trim() : null;
      ctx.records.update(record, patch);
      return ok();
    },
  };
}
