import { zonedIso, type DateParts } from './time.js';

/** Generated times are laid out around this instant (2026-07-01T00:00:00Z), never around now. */
export const SEED_EPOCH = Date.UTC(2026, 6, 1);
export const DAY = 86_400_000;
const WEEK = 7 * DAY;

export const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * Zoned timestamps without an Intl call per record (Intl formatting costs tens of µs): the
 * zone's offset is looked up once per week, and in the few weeks where it changes, the
 * change is located to the second by bisection. Results equal time.ts's zonedIso/fromZoned.
 */
export class ZonedTimes {
  /** Per week: its offset in minutes, or the instant it changes and the offsets around it. */
  private readonly weeks = new Map<
    number,
    number | { at: number; before: number; after: number }
  >();

  constructor(readonly timeZone: string) {}

  private exactOffset(ms: number): number {
    const text = zonedIso(ms, this.timeZone);
    const sign = text.at(-6) === '-' ? -1 : 1;
    return sign * (Number(text.slice(-5, -3)) * 60 + Number(text.slice(-2)));
  }

  /** The zone's UTC offset at that instant, in minutes. */
  offset(ms: number): number {
    const week = Math.floor(ms / WEEK);
    let entry = this.weeks.get(week);
    if (entry === undefined) {
      let lo = week * WEEK;
      let hi = lo + WEEK;
      const before = this.exactOffset(lo);
      const after = this.exactOffset(hi - 1000);
      if (before === after) entry = before;
      else {
        // Zones change offset at most once a week: find the first second of the new one.
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (this.exactOffset(mid) === before) lo = mid;
          else hi = mid;
        }
        entry = { at: hi, before, after };
      }
      this.weeks.set(week, entry);
    }
    if (typeof entry === 'number') return entry;
    return Math.floor(ms / 1000) * 1000 < entry.at ? entry.before : entry.after;
  }

  /** Exactly zonedIso(ms, timeZone). */
  iso(ms: number): string {
    const offset = this.offset(ms);
    const d = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000);
    const sign = offset < 0 ? '-' : '+';
    const abs = Math.abs(offset);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  }

  /** Exactly fromZoned(date, minutes, timeZone): the same two-step guess, with cached offsets. */
  instant(date: DateParts, minutes: number): number {
    const guess = Date.UTC(date.year, date.month - 1, date.day, 0, minutes);
    const first = guess - this.offset(guess) * 60_000;
    return guess - this.offset(first) * 60_000;
  }
}

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
