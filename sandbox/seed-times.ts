import type { DateParts } from './time.js';

/** Generated times are laid out around this instant (2026-07-01T00:00:00Z), never around now. */
export const SEED_EPOCH = Date.UTC(2026, 6, 1);
export const DAY = 86_400_000;

export const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The calendar date `days` after SEED_EPOCH's (a wall-clock date, zone-free). */
export function epochDate(days: number): DateParts {
  const d = new Date(SEED_EPOCH + Math.round(days) * DAY);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

export function dateOfMs(ms: number): DateParts {
  const d = new Date(ms);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

export function addDays(date: DateParts, days: number): DateParts {
  return dateOfMs(Date.UTC(date.year, date.month - 1, date.day + days));
}

export const ymdText = (d: DateParts): string => `${d.year}-${pad(d.month)}-${pad(d.day)}`;
export const mdyText = (d: DateParts): string => `${pad(d.month)}-${pad(d.day)}-${d.year}`;

export function time12Text(minutes: number): string {
  const hour = Math.floor(minutes / 60);
  return `${hour % 12 === 0 ? 12 : hour % 12}:${pad(minutes % 60)} ${hour < 12 ? 'AM' : 'PM'}`;
}
