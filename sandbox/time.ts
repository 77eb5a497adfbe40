import type { Db } from './db.js';

/**
 * Dates and times as the service writes them, in the business's time zone: ISO 8601 with the
 * zone's UTC offset, MM-DD-YYYY and 12-hour times for event creation, YYYY-MM-DD elsewhere,
 * and the formatted_* strings.
 */
interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: string;
}

const partsFormatters = new Map<string, Intl.DateTimeFormat>();

/** Wall-clock parts straight from Intl: exact, and slow (tens of microseconds a call). */
function intlParts(ms: number, timeZone: string): ZonedParts {
  let fmt = partsFormatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'short',
    });
    partsFormatters.set(timeZone, fmt);
  }
  const out: Record<string, string> = {};
  for (const part of fmt.formatToParts(new Date(ms))) out[part.type] = part.value;
  return {
    year: Number(out.year),
    month: Number(out.month),
    day: Number(out.day),
    hour: Number(out.hour),
    minute: Number(out.minute),
    second: Number(out.second),
    weekday: out.weekday ?? '',
  };
}

function intlOffset(ms: number, timeZone: string): number {
  const p = intlParts(ms, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
}

const HOUR_MS = 3_600_000;
/** Offset per zone and UTC hour; `null` marks an hour with a transition inside it. */
const offsetCache = new Map<string, number | null>();

/**
 * Offset of the zone from UTC at that instant, in minutes. Offsets change at most once in an
 * hour, so one Intl call per zone and hour serves every instant in it; an hour whose start
 * and end disagree holds a transition and is computed exactly each time.
 */
function offsetMinutes(ms: number, timeZone: string): number {
  const hour = Math.floor(ms / HOUR_MS);
  const key = `${timeZone}|${hour}`;
  let cached = offsetCache.get(key);
  if (cached === undefined) {
    const start = intlOffset(hour * HOUR_MS, timeZone);
    const end = intlOffset((hour + 1) * HOUR_MS - 1000, timeZone);
    cached = start === end ? start : null;
    if (offsetCache.size > 200_000) offsetCache.clear();
    offsetCache.set(key, cached);
  }
  return cached ?? intlOffset(ms, timeZone);
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

function zonedParts(ms: number, timeZone: string): ZonedParts {
  const local = new Date(ms + offsetMinutes(ms, timeZone) * 60_000);
  return {
    year: local.getUTCFullYear(),
    month: local.getUTCMonth() + 1,
    day: local.getUTCDate(),
    hour: local.getUTCHours(),
    minute: local.getUTCMinutes(),
    second: local.getUTCSeconds(),
    weekday: WEEKDAYS[local.getUTCDay()] ?? '',
  };
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** '2026-06-13T14:00:00-04:00' */
export function zonedIso(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  const off = offsetMinutes(ms, timeZone);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  return `${p.year}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** Wall-clock time in a zone → instant. */
export function fromZoned(
  date: { year: number; month: number; day: number },
  minutesOfDay: number,
  timeZone: string,
): number {
  const guess = Date.UTC(date.year, date.month - 1, date.day, 0, minutesOfDay);
  const first = guess - offsetMinutes(guess, timeZone) * 60_000;
  return guess - offsetMinutes(first, timeZone) * 60_000;
}

export interface DateParts {
  year: number;
  month: number;
  day: number;
}

function validDate(year: number, month: number, day: number): DateParts | undefined {
  const d = new Date(Date.UTC(year, month - 1, day));
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day)
    return undefined;
  if (year < 1900 || year > 2200) return undefined;
  return { year, month, day };
}

/** 'YYYY-MM-DD' → parts, or undefined. */
export function parseYmd(text: unknown): DateParts | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
  return m ? validDate(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
}

/** 'MM-DD-YYYY' → parts, or undefined. */
export function parseMdy(text: unknown): DateParts | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(\d{1,2})-(\d{1,2})-(\d{4})$/.exec(text.trim());
  return m ? validDate(Number(m[3]), Number(m[1]), Number(m[2])) : undefined;
}

/** '2:00 PM' (also '02:00 pm', '14:00') → minutes since midnight, or undefined. */
export function parseTime12(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(\d{1,2}):(\d{2})\s*([AaPp][Mm])?$/.exec(text.trim());
  if (!m) return undefined;
  let hour = Number(m[1]);
  const minute = Number(m[2]);
  if (minute > 59) return undefined;
  if (m[3]) {
    if (hour < 1 || hour > 12) return undefined;
    const pm = m[3].toLowerCase() === 'pm';
    hour = (hour % 12) + (pm ? 12 : 0);
  } else if (hour > 23) return undefined;
  return hour * 60 + minute;
}

export function ymd(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  return `${p.year}-${pad(p.month)}-${pad(p.day)}`;
}

/** '06-13-2026' */
export function mdy(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  return `${pad(p.month)}-${pad(p.day)}-${p.year}`;
}

/** '2:00 PM' */
export function time12(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  const hour = p.hour % 12 === 0 ? 12 : p.hour % 12;
  return `${hour}:${pad(p.minute)} ${p.hour < 12 ? 'AM' : 'PM'}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** 'Sat, Jun 13, 2026' */
export function longDate(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  return `${p.weekday}, ${MONTHS[p.month - 1]} ${p.day}, ${p.year}`;
}

/** formatted_date_range, formatted_time_range, formatted_datetime_range; empty without a date. */
export function formattedRanges(
  startMs: number | null,
  endMs: number | null,
  timeZone: string,
): {
  formatted_date_range: string;
  formatted_time_range: string;
  formatted_datetime_range: string;
} {
  if (startMs === null)
    return { formatted_date_range: '', formatted_time_range: '', formatted_datetime_range: '' };
  const end = endMs ?? startMs;
  const sameDay = ymd(startMs, timeZone) === ymd(end, timeZone);
  const dateRange = sameDay
    ? longDate(startMs, timeZone)
    : `${longDate(startMs, timeZone)} - ${longDate(end, timeZone)}`;
  const timeRange = `${time12(startMs, timeZone)} - ${time12(end, timeZone)}`;
  const datetimeRange = sameDay
    ? `${longDate(startMs, timeZone)} ${timeRange}`
    : `${longDate(startMs, timeZone)} ${time12(startMs, timeZone)} - ${longDate(end, timeZone)} ${time12(end, timeZone)}`;
  return {
    formatted_date_range: dateRange,
    formatted_time_range: timeRange,
    formatted_datetime_range: datetimeRange,
  };
}

/** The time zone of a business (falls back to New York). */
export function businessTimeZone(db: Db, businessId: number): string {
  const row = db.prepare('SELECT time_zone FROM businesses WHERE id = ?').get(businessId) as
    { time_zone: string } | undefined;
  return row?.time_zone ?? 'America/New_York';
}

/** Now, as the service writes timestamps: ISO 8601 with the business's UTC offset. */
export function businessNow(ctx: { db: Db; clock: { now(): number } }, businessId: number): string {
  return zonedIso(ctx.clock.now(), businessTimeZone(ctx.db, businessId));
}
