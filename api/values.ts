/**
 * The service's value formats. Money comes as a decimal string with _cents, _currency and
 * _formatted siblings (all null without the pricing permission). Event creation takes
 * MM-DD-YYYY dates and 12-hour times in the business's time zone; everything else takes
 * YYYY-MM-DD.
 */
export interface Money {
  cents: number;
  /** Decimal string, e.g. "799.00". */
  amount: string;
  currency: string;
  formatted: string;
}

/** Reads the quadruple `name`, `name_cents`, `name_currency`, `name_formatted`; null when unreadable (no pricing permission). */
export function readMoney(
  attributes: Readonly<Record<string, unknown>>,
  name: string,
): Money | null {
  const cents = attributes[`${name}_cents`];
  const amount = attributes[name];
  if (typeof cents !== 'number' || !Number.isFinite(cents)) return null;
  const currency = attributes[`${name}_currency`];
  const formatted = attributes[`${name}_formatted`];
  return {
    cents,
    amount: typeof amount === 'string' ? amount : (cents / 100).toFixed(2),
    currency: typeof currency === 'string' ? currency : 'USD',
    formatted: typeof formatted === 'string' ? formatted : (cents / 100).toFixed(2),
  };
}

const pad = (n: number): string => String(n).padStart(2, '0');

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

/** The wall-clock reading of an instant in a time zone (the business's). */
export function wallClock(instant: Date | string, timeZone: string): WallClock {
  const date = typeof instant === 'string' ? new Date(instant) : instant;
  if (Number.isNaN(date.getTime())) throw new RangeError(`'${String(instant)}' is not a date`);
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  }).formatToParts(date);
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value);
  return {
    year: get('year'),
    month: get('month'),
    day: get('day'),
    hour: get('hour'),
    minute: get('minute'),
  };
}

function dateParts(value: Date | string, timeZone: string | undefined): WallClock {
  if (typeof value === 'string') {
    const plain = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
    if (plain) {
      return {
        year: Number(plain[1]),
        month: Number(plain[2]),
        day: Number(plain[3]),
        hour: 0,
        minute: 0,
      };
    }
  }
  return wallClock(value, timeZone ?? 'UTC');
}

/** YYYY-MM-DD from a Date or ISO string (in `timeZone`, default UTC) or a plain date. */
export function toYmd(value: Date | string, timeZone?: string): string {
  const p = dateParts(value, timeZone);
  return `${p.year}-${pad(p.month)}-${pad(p.day)}`;
}

/** MM-DD-YYYY, the format event creation takes. */
export function toMdy(value: Date | string, timeZone?: string): string {
  const p = dateParts(value, timeZone);
  return `${pad(p.month)}-${pad(p.day)}-${p.year}`;
}

/** 12-hour time with AM/PM ("2:00 PM") of an instant in `timeZone`. */
export function toTime12(value: Date | string, timeZone: string): string {
  const p = wallClock(value, timeZone);
  const hour = p.hour % 12 === 0 ? 12 : p.hour % 12;
  return `${hour}:${pad(p.minute)} ${p.hour < 12 ? 'AM' : 'PM'}`;
}

/** MM-DD-YYYY → YYYY-MM-DD (the event's starts_at_date to ISO form). */
export function mdyToYmd(text: string): string {
  const m = /^(\d{1,2})-(\d{1,2})-(\d{4})$/.exec(text.trim());
  if (!m) throw new RangeError(`'${text}' is not MM-DD-YYYY`);
  return `${m[3]}-${pad(Number(m[1]))}-${pad(Number(m[2]))}`;
}
