import type { StoredRecord } from '../db.js';
import { defaultBrand } from './leads-model.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { findUser } from '../identity.js';
import {
  item,
  listBody,
  ok,
  paging,
  parseInclude,
  listPage,
  refList,
  sideload,
  single,
  type Item,
} from '../envelope.js';
import { isEmail } from '../body-fields.js';
import { badRequest, FieldErrors, forbidden, notFound } from '../errors.js';
import {
  businessTimeZone,
  formattedRanges,
  fromZoned,
  longDate,
  parseTime12,
  parseYmd,
  time12,
  ymd,
  zonedIso,
  businessNow,
} from '../time.js';

/**
 * Appointments: meetings between a staff member and guests.
 *
 * Record types (read by other modules through ctx.records):
 * - 'appointment' AppointmentAttrs. starts_at/ends_at are ISO strings with the business's
 *   offset; canceled is a boolean; soft-deleted appointments are gone from every list.
 * - 'appointment_calendar' CalendarAttrs: { id, user_id, name, slot_length_in_minutes,
 *   day_start, day_end } plus optional booking_questions (custom questions asked by the
 *   calendar's booking page; a calendar without them asks only the built-in questions).
 * - 'user_appointment' UserAppointmentAttrs (child of the appointment): the assigned staff.
 * - 'brand' { id, name }: the leads module's; the first brand is the primary one.
 */
export interface AdditionalGuest {
  name: string | null;
  email: string;
}
export interface AppointmentNotification {
  kind: 'rescheduled' | 'cancellation';
  recipient: string;
  sent_at: string;
}
export interface AppointmentAttrs extends Record<string, unknown> {
  id: number;
  user_id: number;
  user_appointment_calendar_id: number | null;
  brand_id: number;
  guest_name: string;
  guest_email: string;
  guest_phone: string | null;
  additional_guests: AdditionalGuest[];
  starts_at: string;
  ends_at: string;
  length_in_minutes: number;
  location: string | null;
  location_details: string | null;
  private_notes: string | null;
  message: string | null;
  custom_title: string | null;
  created_via: CreatedVia;
  canceled: boolean;
  canceled_at: string | null;
  /** Built-in booking answers (event_date YYYY-MM-DD, venue_name) and custom ones by column. */
  event_date: string | null;
  venue_name: string | null;
  custom_answers: Record<string, string | number | boolean | null>;
  /** Notifications the service sent about this appointment, oldest first. */
  notifications_sent: AppointmentNotification[];
  created_at: string;
}
export interface CalendarQuestion {
  id: number;
  column_name: string;
  label: string;
  kind: 'text' | 'textarea' | 'select' | 'date';
  options?: string[];
}
export interface CalendarAttrs extends Record<string, unknown> {
  id: number;
  user_id: number;
  name: string;
  slot_length_in_minutes: number;
  day_start: string;
  day_end: string;
  booking_questions?: CalendarQuestion[];
}
export interface UserAppointmentAttrs extends Record<string, unknown> {
  id: number;
  appointment_id: number;
  user_id: number;
}
interface BrandAttrs extends Record<string, unknown> {
  id: number;
  name: string;
}

export const CREATED_VIA = ['quick_add', 'widget', 'app'] as const;
export type CreatedVia = (typeof CREATED_VIA)[number];

export const DEFAULT_CALENDAR_QUESTIONS: readonly Omit<CalendarQuestion, 'id'>[] = [
  { column_name: 'occasion', label: 'What is the occasion?', kind: 'text' },
  {
    column_name: 'heard_about_us',
    label: 'How did you hear about us?',
    kind: 'select',
    options: ['Search', 'Social media', 'Friend', 'Venue referral', 'Other'],
  },
  { column_name: 'questions', label: 'Anything we should know before we meet?', kind: 'textarea' },
];

/** Built-in booking questions every calendar asks; their answers live on the appointment. */
const BUILT_IN_QUESTIONS = [
  { column_name: 'guest_phone', label: 'Phone', kind: 'text', intent: 'phone' },
  { column_name: 'event_date', label: 'Event date', kind: 'date', intent: 'event_date' },
  { column_name: 'venue_name', label: 'Venue', kind: 'text', intent: 'venue' },
] as const;

interface UserRow {
  id: number;
  name: string;
  email: string;
  role: string;
}

function userOf(ctx: SandboxContext, businessId: number, id: number): UserRow | undefined {
  return findUser(ctx.db, businessId, id);
}

export function createAppointmentCalendar(
  ctx: SandboxContext,
  businessId: number,
  input: {
    user_id: number;
    name?: string;
    slot_length_in_minutes?: number;
    day_start?: string;
    day_end?: string;
    booking_questions?: readonly Omit<CalendarQuestion, 'id'>[];
  },
): StoredRecord<CalendarAttrs> {
  const questions = (input.booking_questions ?? DEFAULT_CALENDAR_QUESTIONS).map((q) => ({
    ...q,
    id: ctx.records.nextId('appointment_booking_question'),
  }));
  return ctx.records.insert<CalendarAttrs>('appointment_calendar', businessId, (id) => ({
    id,
    user_id: input.user_id,
    name: input.name ?? '30 Minute Consultation',
    slot_length_in_minutes: input.slot_length_in_minutes ?? 30,
    day_start: input.day_start ?? '09:00',
    day_end: input.day_end ?? '17:00',
    booking_questions: questions,
  }));
}

export interface AppointmentInput {
  guest_name: string;
  guest_email: string;
  guest_phone?: string | null;
  additional_guests?: AdditionalGuest[];
  /** Start instant in milliseconds. */
  startsAtMs: number;
  length_in_minutes: number;
  location?: string | null;
  location_details?: string | null;
  private_notes?: string | null;
  message?: string | null;
  custom_title?: string | null;
  user_id: number;
  brand_id?: number;
  user_appointment_calendar_id?: number | null;
  created_via: CreatedVia;
  event_date?: string | null;
  venue_name?: string | null;
  custom_answers?: AppointmentAttrs['custom_answers'];
}

/** Creates an appointment and its staff assignment (used by the API, the seed and the admin API). */
export function createAppointment(
  ctx: SandboxContext,
  businessId: number,
  input: AppointmentInput,
  opts: { silent?: boolean; canceled?: boolean } = {},
): StoredRecord<AppointmentAttrs> {
  const tz = businessTimeZone(ctx.db, businessId);
  const brandId = input.brand_id ?? defaultBrand(ctx, businessId).id;
  const now = businessNow(ctx, businessId);
  const appointment = ctx.records.insert<AppointmentAttrs>(
    'appointment',
    businessId,
    (id) => ({
      id,
      user_id: input.user_id,
      user_appointment_calendar_id: input.user_appointment_calendar_id ?? null,
      brand_id: brandId,
      guest_name: input.guest_name,
      guest_email: input.guest_email,
      guest_phone: input.guest_phone ?? null,
      additional_guests: input.additional_guests ?? [],
      starts_at: zonedIso(input.startsAtMs, tz),
      ends_at: zonedIso(input.startsAtMs + input.length_in_minutes * 60_000, tz),
      length_in_minutes: input.length_in_minutes,
      location: input.location ?? null,
      location_details: input.location_details ?? null,
      private_notes: input.private_notes ?? null,
      message: input.message ?? null,
      custom_title: input.custom_title ?? null,
      created_via: input.created_via,
      canceled: opts.canceled ?? false,
      canceled_at: opts.canceled ? now : null,
      event_date: input.event_date ?? null,
      venue_name: input.venue_name ?? null,
      custom_answers: input.custom_answers ?? {},
      notifications_sent: [],
      created_at: now,
    }),
    opts.silent ? { silent: true } : {},
  );
  ctx.records.insert<UserAppointmentAttrs>(
    'user_appointment',
    businessId,
    (id) => ({ id, appointment_id: appointment.id, user_id: input.user_id }),
    { parentId: appointment.id, silent: true },
  );
  return appointment;
}

function notify(
  ctx: SandboxContext,
  record: StoredRecord<AppointmentAttrs>,
  kind: AppointmentNotification['kind'],
): AppointmentNotification[] {
  return [
    ...record.attrs.notifications_sent,
    { kind, recipient: record.attrs.guest_email, sent_at: businessNow(ctx, record.businessId) },
  ];
}

/** Marks an appointment canceled and notifies the guest; a second cancel changes nothing. */
export function cancelAppointment(
  ctx: SandboxContext,
  record: StoredRecord<AppointmentAttrs>,
): StoredRecord<AppointmentAttrs> {
  if (record.attrs.canceled) return record;
  return ctx.records.update(record, {
    canceled: true,
    canceled_at: businessNow(ctx, record.businessId),
    notifications_sent: notify(ctx, record, 'cancellation'),
  });
}

export function uncancelAppointment(
  ctx: SandboxContext,
  record: StoredRecord<AppointmentAttrs>,
): StoredRecord<AppointmentAttrs> {
  if (!record.attrs.canceled) return record;
  return ctx.records.update(record, { canceled: false, canceled_at: null });
}

export function deleteAppointment(
  ctx: SandboxContext,
  record: StoredRecord<AppointmentAttrs>,
): void {
  ctx.records.softDelete(record, ctx.clock.iso());
}

// ---- presentation -------------------------------------------------------------------------

function meetingUrl(a: AppointmentAttrs): string | null {
  for (const text of [a.location_details, a.location]) {
    const match = text ? /https?:\/\/\S+/.exec(text) : null;
    if (match) return match[0];
  }
  return null;
}

export function appointmentItem(ctx: SandboxContext, r: StoredRecord<AppointmentAttrs>): Item {
  const a = r.attrs;
  const tz = businessTimeZone(ctx.db, r.businessId);
  const start = Date.parse(a.starts_at);
  const end = Date.parse(a.ends_at);
  const staff = userOf(ctx, r.businessId, a.user_id);
  const brand = ctx.records.get<BrandAttrs>('brand', r.businessId, a.brand_id);
  const calendar =
    a.user_appointment_calendar_id === null
      ? undefined
      : ctx.records.get<CalendarAttrs>(
          'appointment_calendar',
          r.businessId,
          a.user_appointment_calendar_id,
        );
  const defaultTitle = calendar
    ? `${calendar.attrs.name} with ${a.guest_name}`
    : `Meeting with ${a.guest_name}`;
  // Custom answers are read through the booking-questions endpoint, not the detail.
  const stored: Record<string, unknown> = { ...a };
  delete stored.custom_answers;
  const userAppointments = ctx.records.children('user_appointment', r.id);
  return item(
    'appointment',
    {
      ...stored,
      id: a.id,
      title: a.custom_title ?? defaultTitle,
      starts_at_date: ymd(start, tz),
      starts_at_time: time12(start, tz),
      ends_at_time: time12(end, tz),
      ...formattedRanges(start, end, tz),
      meeting_url: meetingUrl(a),
      staff_id: a.user_id,
      staff_name: staff?.name ?? null,
      staff_email: staff?.email ?? null,
      brand_name: brand?.attrs.name ?? null,
      calendar_name: calendar?.attrs.name ?? null,
    },
    {
      user_appointments: refList(
        'user_appointment',
        userAppointments.map((u) => u.id),
      ),
    },
  );
}

function userAppointmentItems(ctx: SandboxContext, r: StoredRecord<AppointmentAttrs>): Item[] {
  return ctx.records.children<UserAppointmentAttrs>('user_appointment', r.id).map((u) => {
    const user = userOf(ctx, r.businessId, u.attrs.user_id);
    return item('user_appointment', {
      ...u.attrs,
      user_name: user?.name ?? null,
      user_email: user?.email ?? null,
    });
  });
}

// ---- booking questions --------------------------------------------------------------------

function calendarQuestions(calendar: StoredRecord<CalendarAttrs>): CalendarQuestion[] {
  return calendar.attrs.booking_questions ?? [];
}

function formatAnswer(
  kind: string,
  value: string | number | boolean | null | undefined,
  tz: string,
): string {
  if (value === null || value === undefined || value === '') return '';
  if (kind === 'date') {
    const d = parseYmd(value);
    if (d) return longDate(fromZoned(d, 12 * 60, tz), tz);
  }
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  return String(value);
}

function bookingQuestionItems(
  ctx: SandboxContext,
  r: StoredRecord<AppointmentAttrs>,
  calendar: StoredRecord<CalendarAttrs> | undefined,
): Item[] {
  if (!calendar) return [];
  const tz = businessTimeZone(ctx.db, r.businessId);
  const a = r.attrs;
  const custom = calendarQuestions(calendar).map((q) => {
    const value = a.custom_answers[q.column_name] ?? null;
    return item('appointment_booking_question', {
      id: q.id,
      appointment_id: a.id,
      column_name: q.column_name,
      label: q.label,
      kind: q.kind,
      intent: 'custom',
      built_in: false,
      options: q.options ?? null,
      value,
      formatted_value: formatAnswer(q.kind, value, tz),
    });
  });
  const builtIn = BUILT_IN_QUESTIONS.map((q) => {
    const value = a[q.column_name] ?? null;
    return item('appointment_booking_question', {
      id: q.column_name,
      appointment_id: a.id,
      column_name: q.column_name,
      label: q.label,
      kind: q.kind,
      intent: q.intent,
      built_in: true,
      options: null,
      value,
      formatted_value: formatAnswer(q.kind, value, tz),
    });
  });
  return [...custom, ...builtIn];
}

// ---- input reading ------------------------------------------------------------------------

type Body = Record<string, unknown>;

function has(body: Body, name: string): boolean {
  return Object.prototype.hasOwnProperty.call(body, name) && body[name] !== undefined;
}

/** A string field: undefined when absent, null when blank, otherwise the trimmed text. */
function optString(body: Body, name: string, errors: FieldErrors): string | null | undefined {
  if (!has(body, name)) return undefined;
  const v = body[name];
  if (v === null) return null;
  if (typeof v !== 'string') {
    errors.add(name, 'must be a string');
    return undefined;
  }
  return v.trim() === '' ? null : v.trim();
}

function reqString(body: Body, name: string, errors: FieldErrors): string | undefined {
  const v = optString(body, name, errors);
  if (v === null || (v === undefined && !has(body, name))) {
    errors.add(name, "can't be blank");
    return undefined;
  }
  return v;
}

function optInteger(body: Body, name: string, errors: FieldErrors): number | null | undefined {
  if (!has(body, name)) return undefined;
  const v = body[name];
  if (v === null || v === '') return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    errors.add(name, 'must be an integer');
    return undefined;
  }
  return v;
}

function readGuests(body: Body, errors: FieldErrors): AdditionalGuest[] | undefined {
  if (!has(body, 'additional_guests')) return undefined;
  const v = body.additional_guests;
  if (v === null) return [];
  if (!Array.isArray(v)) {
    errors.add('additional_guests', 'must be an array of guests');
    return undefined;
  }
  const guests: AdditionalGuest[] = [];
  for (const g of v as unknown[]) {
    const email =
      typeof g === 'string' ? g : typeof g === 'object' && g !== null ? (g as Body).email : null;
    const name = typeof g === 'object' && g !== null ? (g as Body).name : null;
    if (typeof email !== 'string' || !isEmail(email.trim())) {
      errors.add('additional_guests', 'must each have a valid email');
      return undefined;
    }
    guests.push({ name: typeof name === 'string' ? name : null, email: email.trim() });
  }
  return guests;
}

function checkEmail(value: string | null | undefined, name: string, errors: FieldErrors): void {
  if (typeof value === 'string' && !isEmail(value)) errors.add(name, 'is invalid');
}

function readDate(body: Body, name: string, errors: FieldErrors) {
  if (!has(body, name) || body[name] === null || body[name] === '') return undefined;
  const d = parseYmd(body[name]);
  if (!d) errors.add(name, 'must be a date as YYYY-MM-DD');
  return d;
}

function readTime(body: Body, name: string, errors: FieldErrors): number | undefined {
  if (!has(body, name) || body[name] === null || body[name] === '') return undefined;
  const t = parseTime12(body[name]);
  if (t === undefined) errors.add(name, 'must be a time like 2:00 PM');
  return t;
}

function readLength(body: Body, errors: FieldErrors): number | null | undefined {
  const v = optInteger(body, 'length_in_minutes', errors);
  if (typeof v === 'number' && v <= 0) {
    errors.add('length_in_minutes', 'must be greater than 0');
    return undefined;
  }
  return v;
}

function checkBrand(
  ctx: SandboxContext,
  businessId: number,
  brandId: number | null | undefined,
  errors: FieldErrors,
): void {
  if (typeof brandId !== 'number') return;
  defaultBrand(ctx, businessId);
  if (!ctx.records.get('brand', businessId, brandId))
    errors.add('brand_id', 'is not a brand of this business');
}

function bodyOf(body: unknown): Body {
  return body as Body;
}

// ---- access -------------------------------------------------------------------------------

/** A caller holding only the assigned_* permission reaches only appointments assigned to it. */
function reachesAll(caller: Caller, access: 'read' | 'write'): boolean {
  return caller.permissions.has(`unassigned_appointment_${access}`);
}

function loadAppointment(
  ctx: SandboxContext,
  caller: Caller,
  rawId: string | undefined,
  access: 'read' | 'write',
): StoredRecord<AppointmentAttrs> {
  const id = Number(rawId);
  const record = ctx.records.get<AppointmentAttrs>('appointment', caller.businessId, id);
  if (!record) throw notFound('Appointment', rawId ?? '');
  if (!reachesAll(caller, access) && record.attrs.user_id !== caller.userId) {
    throw forbidden(
      'permission_denied',
      `This credential reaches only appointments assigned to its user (needs unassigned_appointment_${access})`,
    );
  }
  return record;
}

function calendarOf(
  ctx: SandboxContext,
  r: StoredRecord<AppointmentAttrs>,
): StoredRecord<CalendarAttrs> | undefined {
  const id = r.attrs.user_appointment_calendar_id;
  return id === null
    ? undefined
    : ctx.records.get<CalendarAttrs>('appointment_calendar', r.businessId, id);
}

// ---- list filters -------------------------------------------------------------------------

function queryString(query: Record<string, unknown>, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw badRequest('invalid_parameter', `${name} must be given once`);
  return raw;
}

function queryEnum<T extends string>(
  query: Record<string, unknown>,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const raw = queryString(query, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw badRequest('invalid_parameter', `${name} must be one of ${allowed.join(', ')}`);
  }
  return raw as T;
}

function queryDate(query: Record<string, unknown>, name: string) {
  const raw = queryString(query, name);
  if (raw === undefined) return undefined;
  const d = parseYmd(raw);
  if (!d) throw badRequest('invalid_parameter', `${name} must be a date as YYYY-MM-DD`);
  return d;
}

function queryId(
  query: Record<string, unknown>,
  name: string,
  allowMy = false,
): number | 'my' | undefined {
  const raw = queryString(query, name);
  if (raw === undefined) return undefined;
  if (allowMy && raw === 'my') return 'my';
  if (!/^\d{1,15}$/.test(raw)) {
    throw badRequest(
      'invalid_parameter',
      `${name} must be a positive integer${allowMy ? " or 'my'" : ''}`,
    );
  }
  return Number(raw);
}

const CANCELED_STATUS = ['all', 'canceled', 'not_canceled'] as const;
const PAST_OR_FUTURE = ['all', 'past', 'future'] as const;

function listAppointments(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const businessId = caller.businessId;
  const tz = businessTimeZone(ctx.db, businessId);
  const startDate = queryDate(query, 'start_date');
  const endDate = queryDate(query, 'end_date');
  const staff = queryId(query, 'staff_id', true);
  const brandId = queryId(query, 'brand_id');
  const canceled = queryEnum(query, 'canceled_status', CANCELED_STATUS) ?? 'all';
  const when = queryEnum(query, 'past_or_future', PAST_OR_FUTURE) ?? 'all';
  const search = queryString(query, 'search_text')?.trim().toLowerCase();
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
