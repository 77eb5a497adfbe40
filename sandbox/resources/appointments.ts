import type { StoredRecord } from '../db.js';
import { defaultBrand } from './leads-model.js';
import type { SandboxContext } from '../context.js';
import { businessTimeZone, zonedIso, businessNow } from '../time.js';
import {
  type AdditionalGuest,
  type AppointmentNotification,
  type AppointmentAttrs,
  type CalendarQuestion,
  type CalendarAttrs,
  type UserAppointmentAttrs,
  type CreatedVia,
  DEFAULT_CALENDAR_QUESTIONS,
} from './appointments-model.js';

/**
 * Making, cancelling and deleting appointments and calendars (record shapes in
 * appointments-model.ts, body and query reading in appointments-input.ts, answers in
 * appointments-view.ts, routes in appointments-routes.ts).
 */

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

export function notify(
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
