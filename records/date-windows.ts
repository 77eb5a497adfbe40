/**
 * Date windows for the lists that filter by date (lead bookings, event bookings,
 * appointments): inclusive YYYY-MM-DD bounds, either side open. A window whose total is over
 * the reach limit is cut at dates taken from a sample of its own results, so each part holds
 * about the same share; a single day cannot be cut and is reported as a gap.
 */
export interface DateWindow {
  /** First day, inclusive; absent: no lower bound. */
  start?: string;
  /** Last day, inclusive; absent: no upper bound. */
  end?: string;
}

/** Pivot for a window whose sample holds no date (only the unbounded root can be so). */
export const ANCHOR_DATE = '2025-01-01';
/** Each part aims at this share of the reach limit, so that sampling error rarely overflows it. */
const FILL = 0.6;
const MAX_PARTS = 64;

const YMD = /^(\d{4})-(\d{2})-(\d{2})$/;

export function addDays(ymd: string, days: number): string {
  const m = YMD.exec(ymd);
  if (!m) throw new RangeError(`'${ymd}' is not a YYYY-MM-DD date`);
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + days));
  return date.toISOString().slice(0, 10);
}

function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

/** The calendar date a timestamp starts with (the service's local date for offset times). */
export function dateOf(timestamp: string | null | undefined): string | null {
  if (typeof timestamp !== 'string') return null;
  const date = timestamp.slice(0, 10);
  return YMD.test(date) ? date : null;
}

function inside(window: DateWindow, date: string): boolean {
  return (
    (window.start === undefined || date >= window.start) &&
    (window.end === undefined || date <= window.end)
  );
}

/** A pivot p cuts a window into [start, p] and [p + 1, end]: p must leave both non-empty. */
function validPivot(window: DateWindow, pivot: string): boolean {
  return (
    (window.start === undefined || pivot >= window.start) &&
    (window.end === undefined || pivot < window.end)
  );
}

function windowsAt(window: DateWindow, pivots: readonly string[]): DateWindow[] {
  const out: DateWindow[] = [];
  let start = window.start;
  for (const pivot of pivots) {
    out.push({ ...(start !== undefined ? { start } : {}), end: pivot });
    start = addDays(pivot, 1);
  }
  out.push({
    ...(start !== undefined ? { start } : {}),
    ...(window.end !== undefined ? { end: window.end } : {}),
  });
  return out;
}

/**
 * Cuts a window of `total` results into contiguous windows that together cover exactly the
 * same dates; null when it is a single day. Pivots are quantiles of the sample's dates,
 * enough of them that each part should fit in the reach limit.
 */
export function splitWindow(
  window: DateWindow,
  sampleDates: readonly (string | null)[],
  total: number,
  reachLimit: number,
): DateWindow[] | null {
  if (window.start !== undefined && window.start === window.end) return null;
  const dates = sampleDates.filter((d): d is string => d !== null && inside(window, d)).sort();
  const parts = Math.min(MAX_PARTS, Math.max(2, Math.ceil(total / (reachLimit * FILL))));
  const pivots: string[] = [];
  for (let i = 1; i < parts && dates.length > 0; i += 1) {
    const pivot = dates[Math.min(dates.length - 1, Math.floor((i * dates.length) / parts))];
    if (pivot !== undefined && validPivot(window, pivot) && !pivots.includes(pivot))
      pivots.push(pivot);
  }
  if (pivots.length === 0) {
    const fallback = fallbackPivot(window, dates[0]);
    if (fallback === undefined) return null;
    pivots.push(fallback);
  }
  return windowsAt(window, pivots.sort());
}

/** A pivot when the sample gives none: the middle day, or beside the one date seen. */
function fallbackPivot(window: DateWindow, seen: string | undefined): string | undefined {
  const { start, end } = window;
  if (start !== undefined && end !== undefined) {
    return addDays(start, Math.floor(daysBetween(start, end) / 2));
  }
  const near = seen ?? start ?? end ?? ANCHOR_DATE;
  for (const candidate of [near, addDays(near, -1)]) {
    if (validPivot(window, candidate)) return candidate;
  }
  return undefined;
}
