import { FieldErrors } from './errors.js';
import { dateForm, parseTime12, parseYmd } from './time.js';

/** Readers of request-body values shared by the resource modules: one rule per kind. */

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/** Whether a (trimmed) text is shaped like an e-mail address. */
export function isEmail(text: string): boolean {
  return EMAIL.test(text);
}

/**
 * The longest a booking or an appointment may last, in days and in minutes. The spec sets no
 * bound, but a length is added to a start to make `ends_at`: unbounded, a large one made an
 * end no ISO 8601 timestamp holds (year 21039), or threw while the answer was formatted,
 * after the record was stored, so every later list holding it failed. A year covers any booking.
 */
export const MAX_LENGTH_DAYS = 366;
export const MAX_LENGTH_MINUTES = MAX_LENGTH_DAYS * 1440;

/**
 * The largest money amount a body may set. The spec sets none either; unbounded, 1e300 was
 * answered as the decimal string '1e+300' with `_cents` 1e302, where the spec has a decimal
 * string and an integer. A billion keeps the cents of any sum of them a whole number.
 */
export const MAX_AMOUNT = 1_000_000_000;

/**
 * The largest quantity of one add-on on a lead booking. Adding the same add-on again adds to
 * the line's quantity, and unbounded three adds of 2^53 - 1 stored a number JSON readers
 * cannot hold exactly.
 */
export const MAX_QUANTITY = 10_000;

export interface NumberRule {
  /** Whole numbers only ('must be an integer …'); otherwise any finite number ('is not a number'). */
  integer?: boolean;
  /** The least value allowed. */
  min?: number;
  /** The largest value allowed. */
  max?: number;
  /** Numbers sent as text count too (digits; with a sign and decimals unless integer), as Rails casts them. */
  text?: boolean;
}

/** The values an integer rule allows, as a refusal says them: 'from 1 to 366'. */
function integerRange(rule: NumberRule): string {
  if (rule.min !== undefined && rule.max !== undefined) return ` from ${rule.min} to ${rule.max}`;
  if (rule.min !== undefined) return ` greater than or equal to ${rule.min}`;
  if (rule.max !== undefined) return ` less than or equal to ${rule.max}`;
  return '';
}

/**
 * A body value read as a number, or the message saying why it is not one. A value out of
 * range is told the bound it missed; a non-integer, every bound (it said only 'must be an
 * integer', of 1.5 and, where a field checked its own, of -4 too).
 */
export function readNumber(value: unknown, rule: NumberRule): number | string {
  const pattern = rule.integer ? /^\d{1,15}$/ : /^-?\d+(\.\d+)?$/;
  const n =
    typeof value === 'number'
      ? value
      : rule.text && typeof value === 'string' && pattern.test(value.trim())
        ? Number(value.trim())
        : NaN;
  if (rule.integer ? !Number.isSafeInteger(n) : !Number.isFinite(n)) {
    return rule.integer ? `must be an integer${integerRange(rule)}` : 'is not a number';
  }
  if (rule.min !== undefined && n < rule.min) return `must be greater than or equal to ${rule.min}`;
  if (rule.max !== undefined && n > rule.max) return `must be less than or equal to ${rule.max}`;
  return n;
}

/**
 * A number field of `body` under `rule`, its refusal added to `errors`: undefined when not
 * sent or refused, null when sent as null or blank (it clears), unless `required`, when
 * both are "can't be blank". Every body number is read here, through BodyFields or not.
 */
export function numberField(
  body: Record<string, unknown>,
  name: string,
  errors: FieldErrors,
  rule: NumberRule & { required?: boolean },
): number | null | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    if (!rule.required) return value === undefined ? undefined : null;
    errors.add(name, "can't be blank");
    return undefined;
  }
  const read = readNumber(value, rule);
  if (typeof read === 'string') {
    errors.add(name, read);
    return undefined;
  }
  return read;
}

/** An id field: a JSON integer, at least 1. */
export const ID: NumberRule = { integer: true, min: 1 };

/** A money amount: never negative, at most MAX_AMOUNT. Every amount a body sets is read by it. */
export const AMOUNT: NumberRule = { min: 0, max: MAX_AMOUNT };

/**
 * Reads typed body fields, collecting Rails-style messages. Each reader returns undefined when
 * the field was not sent (or had the wrong type, which is recorded), null when it was sent
 * as null or a blank string (which clears it), and the value otherwise.
 */
export class BodyFields {
  constructor(
    readonly body: Record<string, unknown>,
    readonly errors = new FieldErrors(),
  ) {}

  sent(name: string): boolean {
    return Object.hasOwn(this.body, name) && this.body[name] !== undefined;
  }

  private raw(name: string): unknown {
    if (!this.sent(name)) return undefined;
    const value = this.body[name];
    if (value === null || (typeof value === 'string' && value.trim() === '')) return null;
    return value;
  }

  string(name: string): string | null | undefined {
    const value = this.raw(name);
    if (value === undefined || value === null) return value;
    if (typeof value !== 'string') {
      this.errors.add(name, 'must be a string');
      return undefined;
    }
    return value.trim();
  }

  integer(name: string, min = 1, max?: number): number | null | undefined {
    return this.numeric(
      name,
      max === undefined ? { integer: true, min } : { integer: true, min, max },
    );
  }

  number(name: string, min = 0): number | null | undefined {
    return this.numeric(name, { min });
  }

  amount(name: string): number | null | undefined {
    return this.numeric(name, AMOUNT);
  }

  private numeric(name: string, rule: NumberRule): number | null | undefined {
    return numberField(this.body, name, this.errors, rule);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T | null | undefined {
    const value = this.string(name);
    if (value === undefined || value === null) return value;
    if (!(allowed as readonly string[]).includes(value)) {
      this.errors.add(name, `is not included in the list (${allowed.join(', ')})`);
      return undefined;
    }
    return value as T;
  }

  date(name: string): string | null | undefined {
    const value = this.string(name);
    if (value === undefined || value === null) return value;
    if (!parseYmd(value)) {
      this.errors.add(name, `must be ${dateForm('YYYY-MM-DD')}`);
      return undefined;
    }
    return value;
  }

  time(name: string): string | null | undefined {
    const value = this.string(name);
    if (value === undefined || value === null) return value;
    if (parseTime12(value) === undefined) {
      this.errors.add(name, 'must be a time formatted hh:mm AM/PM');
      return undefined;
    }
    return value;
  }
}
