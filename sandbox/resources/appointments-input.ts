import { defaultBrand } from './leads-model.js';
import type { SandboxContext } from '../context.js';
import { ID, isEmail, MAX_LENGTH_MINUTES, numberField } from '../body-fields.js';
import type { FieldErrors } from '../errors.js';
import { dateForm, parseTime12, parseYmd } from '../time.js';
import type { AdditionalGuest } from './appointments-model.js';

/** Reading appointment bodies and list filters; wrong values become 422 or 400 messages. */

export type Body = Record<string, unknown>;

export function has(body: Body, name: string): boolean {
  return Object.prototype.hasOwnProperty.call(body, name) && body[name] !== undefined;
}

/** A string field: undefined when absent, null when blank, otherwise the trimmed text. */
export function optString(
  body: Body,
  name: string,
  errors: FieldErrors,
): string | null | undefined {
  if (!has(body, name)) return undefined;
  const v = body[name];
  if (v === null) return null;
  if (typeof v !== 'string') {
    errors.add(name, 'must be a string');
    return undefined;
  }
  return v.trim() === '' ? null : v.trim();
}

export function reqString(body: Body, name: string, errors: FieldErrors): string | undefined {
  const v = optString(body, name, errors);
  if (v === null || (v === undefined && !has(body, name))) {
    errors.add(name, "can't be blank");
    return undefined;
  }
  return v;
}

/** An id field (user, brand, calendar). */
export function optInteger(
  body: Body,
  name: string,
  errors: FieldErrors,
): number | null | undefined {
  return numberField(body, name, errors, ID);
}

export function readGuests(body: Body, errors: FieldErrors): AdditionalGuest[] | undefined {
  if (!has(body, 'additional_guests')) return undefined;
  const v = body.additional_guests;
  if (v === null) return [];
  if (!Array.isArray(v)) {
    errors.add('additional_guests', 'must be an array of guests');
    return undefined;
  }
  const guests: AdditionalGuest[] = [];
  for (const g of v as unknown[]) {
    const email =
      typeof g === 'string' ? g : typeof g === 'object' && g !== null ? (g as Body).email : null;
    const name = typeof g === 'object' && g !== null ? (g as Body).name : null;
    if (typeof email !== 'string' || !isEmail(email.trim())) {
      errors.add('additional_guests', 'must each have a valid email');
      return undefined;
    }
    guests.push({ name: typeof name === 'string' ? name : null, email: email.trim() });
  }
  return guests;
}

export function checkEmail(
  value: string | null | undefined,
  name: string,
  errors: FieldErrors,
): void {
  if (typeof value === 'string' && !isEmail(value)) errors.add(name, 'is invalid');
}

export function readDate(body: Body, name: string, errors: FieldErrors) {
  if (!has(body, name) || body[name] === null || body[name] === '') return undefined;
  const d = parseYmd(body[name]);
  if (!d) errors.add(name, `must be ${dateForm('YYYY-MM-DD')}`);
  return d;
}

export function readTime(body: Body, name: string, errors: FieldErrors): number | undefined {
  if (!has(body, name) || body[name] === null || body[name] === '') return undefined;
  const t = parseTime12(body[name]);
  if (t === undefined) errors.add(name, 'must be a time like 2:00 PM');
  return t;
}

export function readLength(body: Body, errors: FieldErrors): number | null | undefined {
  return numberField(body, 'length_in_minutes', errors, {
    integer: true,
    min: 1,
    max: MAX_LENGTH_MINUTES,
  });
}

export function checkBrand(
  ctx: SandboxContext,
  businessId: number,
  brandId: number | null | undefined,
  errors: FieldErrors,
): void {
  if (typeof brandId !== 'number') return;
  defaultBrand(ctx, businessId);
  if (!ctx.records.get('brand', businessId, brandId))
    errors.add('brand_id', 'is not a brand of this business');
}

export function bodyOf(body: unknown): Body {
  return body as Body;
}

export const CANCELED_STATUS = ['all', 'canceled', 'not_canceled'] as const;
export const PAST_OR_FUTURE = ['all', 'past', 'future'] as const;
