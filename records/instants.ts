/**
 * Whether a text is already in the one form every destination stores an instant in, told
 * without parsing it. The mirror checks each timestamp at three boundaries (canonical form,
 * the destination's row, the destination's own check); a text already in that form is most of
 * them, and a parse and a new string for each cost more than the rest of the check.
 */

const ZERO = 48;

/** The number written by `count` digits of `text` from `from`, or -1 where one is no digit. */
function digitsAt(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** Days in a month (1–12) of the Gregorian calendar, as Date counts them in every year. */
function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Whether `text` is exactly what `Date.prototype.toISOString` writes for some instant of the
 * years 0000 to 9999: `YYYY-MM-DDTHH:mm:ss.sssZ`, a real calendar date and time. For such a
 * text `new Date(Date.parse(text)).toISOString() === text`; for any other it may not be (Date
 * rolls 30 February over into March), and callers parse it as before.
 */
export function isUtcIso(text: string): boolean {
  if (
    text.length !== 24 ||
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 || // T
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(19) !== 46 || // .
    text.charCodeAt(23) !== 90 // Z
  ) {
    return false;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  return (
    year >= 0 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    hour >= 0 &&
    hour <= 23 &&
    minute >= 0 &&
    minute <= 59 &&
    second >= 0 &&
    second <= 59 &&
    digitsAt(text, 20, 3) >= 0
  );
}
