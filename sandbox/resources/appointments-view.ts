import type { StoredRecord } from '../db.js';
import type { SandboxContext } from '../context.js';
import { item, refList, type Item } from '../envelope.js';
import {
  businessTimeZone,
  formattedRanges,
  fromZoned,
  longDate,
  parseYmd,
  time12,
  ymd,
} from '../time.js';
import {
  type AppointmentAttrs,
  type CalendarQuestion,
  type CalendarAttrs,
  type UserAppointmentAttrs,
  type BrandAttrs,
  BUILT_IN_QUESTIONS,
  userOf,
} from './appointments-model.js';

/** Appointments, their staff and their booking questions as the API answers them. */

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

export function userAppointmentItems(
  ctx: SandboxContext,
  r: StoredRecord<AppointmentAttrs>,
): Item[] {
  return ctx.records.children<UserAppointmentAttrs>('user_appointment', r.id).map((u) => {
    const user = userOf(ctx, r.businessId, u.attrs.user_id);
    return item('user_appointment', {
      ...u.attrs,
      user_name: user?.name ?? null,
      user_email: user?.email ?? null,
    });
  });
}

export function calendarQuestions(calendar: StoredRecord<CalendarAttrs>): CalendarQuestion[] {
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

export function bookingQuestionItems(
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
