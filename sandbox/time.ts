import { sql, type Db } from './db.js';

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

const DAY_MS = 86_400_000;
/** A UTC day's offset, or, in a day with a transition, its first second and both offsets. */
type DayOffset = number | { at: number; before: number; after: number };
const offsetCache = new Map<string, Map<number, DayOffset>>();
let cachedDays = 0;

/**
 * Offset of the zone from UTC at that instant, in minutes, with two Intl calls per zone and
 * UTC day (Intl costs tens of microseconds a call): offsets change at most once a day, so a
 * day whose first and last seconds agree has one offset, and in the few days that hold a
 * transition, its second is found by bisection once.
 */
function offsetMinutes(ms: number, timeZone: string): number {
  const day = Math.floor(ms / DAY_MS);
  let zone = offsetCache.get(timeZone);
  if (!zone) offsetCache.set(timeZone, (zone = new Map<number, DayOffset>()));
  let entry = zone.get(day);
  if (entry === undefined) {
    if (cachedDays > 100_000) {
      offsetCache.clear();
      offsetCache.set(timeZone, (zone = new Map<number, DayOffset>()));
      cachedDays = 0;
    }
    entry = dayOffset(day, timeZone);
    zone.set(day, entry);
    cachedDays += 1;
  }
  if (typeof entry === 'number') return entry;
  return Math.floor(ms / 1000) * 1000 < entry.at ? entry.before : entry.after;
}

function dayOffset(day: number, timeZone: string): DayOffset {
  let lo = day * DAY_MS;
  let hi = lo + DAY_MS;
  const before = intlOffset(lo, timeZone);
  const after = intlOffset(hi - 1000, timeZone);
  if (before === after) return before;
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (intlOffset(mid, timeZone) === before) lo = mid;
    else hi = mid;
  }
  return { at: hi, before, after };
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** An instant's wall-clock parts in a zone, with the zone's offset then (minutes). */
interface Zoned extends ZonedParts {
  offset: number;
}

function zonedParts(ms: number, timeZone: string): Zoned {
  const offset = offsetMinutes(ms, timeZone);
  const local = new Date(ms + offset * 60_000);
  return {
    year: local.getUTCFullYear(),
    month: local.getUTCMonth() + 1,
    day: local.getUTCDate(),
    hour: local.getUTCHours(),
    minute: local.getUTCMinutes(),
    second: local.getUTCSeconds(),
    weekday: WEEKDAYS[local.getUTCDay()] ?? '',
    offset,
  };
}

export const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** '2026-06-13T14:00:00-04:00' */
export function zonedIso(ms: number, timeZone: string): string {
  const p = zonedParts(ms, timeZone);
  const sign = p.offset < 0 ? '-' : '+';
  const abs = Math.abs(p.offset);
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

/** The years the sandbox takes in a date (the spec names none). */
const FIRST_YEAR = 1900;
const LAST_YEAR = 2200;

/** How a refusal names a date it takes: the form, and the years (`a date as YYYY-MM-DD, …`). */
/** The years every date and timestamp a caller sets may fall in, as a refusal says them. */
export const YEARS = `in the years ${FIRST_YEAR} to ${LAST_YEAR}`;

export const dateForm = (form: 'YYYY-MM-DD' | 'MM-DD-YYYY'): string =>
  `a date as ${form}, ${YEARS}`;

function validDate(year: number, month: number, day: number): DateParts | undefined {
  const d = new Date(Date.UTC(year, month - 1, day));
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day)
    return undefined;
  if (year < FIRST_YEAR || year > LAST_YEAR) return undefined;
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

/** '2026-06-13' */
export const ymdOf = (p: DateParts): string => `${p.year}-${pad(p.month)}-${pad(p.day)}`;
/** '06-13-2026' */
export const mdyOf = (p: DateParts): string => `${pad(p.month)}-${pad(p.day)}-${p.year}`;

/** The UTC calendar date of an instant. */
export function dateOfMs(ms: number): DateParts {
  const d = new Date(ms);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** The calendar date `days` after (or before) `date`. */
export function addDays(date: DateParts, days: number): DateParts {
  return dateOfMs(Date.UTC(date.year, date.month - 1, date.day + days));
}

export function ymd(ms: number, timeZone: string): string {
  return ymdOf(zonedParts(ms, timeZone));
}

/** '06-13-2026' */
export function mdy(ms: number, timeZone: string): string {
  return mdyOf(zonedParts(ms, timeZone));
}

/** Minutes after midnight as '6:30 PM'. */
export function clock12(minutes: number): string {
  const hour = Math.floor(minutes / 60) % 24;
  return `${hour % 12 === 0 ? 12 : hour % 12}:${pad(minutes % 60)} ${hour < 12 ? 'AM' : 'PM'}`;
}

const time12Of = (p: ZonedParts): string => clock12(p.hour * 60 + p.minute);

/** '2:00 PM' */
export function time12(ms: number, timeZone: string): string {
  return time12Of(zonedParts(ms, timeZone));
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const longDateOf = (p: ZonedParts): string =>
  `${p.weekday}, ${MONTHS[p.month - 1]} ${p.day}, ${p.year}`;

/** 'Sat, Jun 13, 2026' */
export function longDate(ms: number, timeZone: string): string {
  return longDateOf(zonedParts(ms, timeZone));
}

/**
 * formatted_date_range, formatted_time_range, formatted_datetime_range; empty without a
 * date; a null end is the start. `timed: false` (a booking with a date and no time) leaves
 * the times out.
 */
export function formattedRanges(
  startMs: number | null,
  endMs: number | null,
  timeZone: string,
  timed = true,
): {
  formatted_date_range: string;
  formatted_time_range: string;
  formatted_datetime_range: string;
} {
  if (startMs === null)
    return { formatted_date_range: '', formatted_time_range: '', formatted_datetime_range: '' };
  // Each end broken into parts once: the strings below all read them.
  const start = zonedParts(startMs, timeZone);
  const end = endMs === null ? start : zonedParts(endMs, timeZone);
  const sameDay = ymdOf(start) === ymdOf(end);
  const startDate = longDateOf(start);
  const dateRange = sameDay ? startDate : `${startDate} - ${longDateOf(end)}`;
  if (!timed) {
    return {
      formatted_date_range: dateRange,
      formatted_time_range: '',
      formatted_datetime_range: dateRange,
    };
  }
  const startTime = time12Of(start);
  const endTime = time12Of(end);
  const timeRange = `${startTime} - ${endTime}`;
  return {
    formatted_date_range: dateRange,
    formatted_time_range: timeRange,
    formatted_datetime_range: sameDay
      ? `${startDate} ${timeRange}`
      : `${startDate} ${startTime} - ${longDateOf(end)} ${endTime}`,
  };
}

/** The time zone of a business (falls back to New York). */
export function businessTimeZone(db: Db, businessId: number): string {
  const row = sql(db, 'SELECT time_zone FROM businesses WHERE id = ?').get(businessId) as
    { time_zone: string } | undefined;
  return row?.time_zone ?? 'America/New_York';
}

/** Now, as the service writes timestamps: ISO 8601 with the business's UTC offset. */
export function businessNow(ctx: { db: Db; clock: { now(): number } }, businessId: number): string {
  return zonedIso(ctx.clock.now(), businessTimeZone(ctx.db, businessId));
}
