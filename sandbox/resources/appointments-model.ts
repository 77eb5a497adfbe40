import type { StoredRecord } from '../db.js';
import type { Caller } from '../auth.js';
import type { SandboxContext } from '../context.js';
import { findUser } from '../identity.js';
import { forbidden, notFound } from '../errors.js';

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
export interface BrandAttrs extends Record<string, unknown> {
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
export const BUILT_IN_QUESTIONS = [
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

export function userOf(ctx: SandboxContext, businessId: number, id: number): UserRow | undefined {
  return findUser(ctx.db, businessId, id);
}

/** A caller holding only the assigned_* permission reaches only appointments assigned to it. */
export function reachesAll(caller: Caller, access: 'read' | 'write'): boolean {
  return caller.permissions.has(`unassigned_appointment_${access}`);
}

export function loadAppointment(
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

export function calendarOf(
  ctx: SandboxContext,
  r: StoredRecord<AppointmentAttrs>,
): StoredRecord<CalendarAttrs> | undefined {
  const id = r.attrs.user_appointment_calendar_id;
  return id === null
    ? undefined
    : ctx.records.get<CalendarAttrs>('appointment_calendar', r.businessId, id);
}
