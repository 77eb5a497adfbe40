import type { StoredRecord } from '../db.js';
import type { SandboxContext } from '../context.js';
import {
  AMOUNT,
  MAX_LENGTH_DAYS,
  MAX_LENGTH_MINUTES,
  readNumber,
  type NumberRule,
} from '../body-fields.js';
import { type FieldErrors, humanize } from '../errors.js';
import {
  businessTimeZone,
  fromZoned,
  parseMdy,
  dateForm,
  parseTime12,
  parseYmd,
  type DateParts,
} from '../time.js';
import { getAddOn } from './add-ons.js';
import { getBackdrop, getPackage, type PackageAttrs } from './offerings.js';
import { type BookingPlan, type PlannedAddOn, plannedAddOn } from './events-model.js';

/** Reading event bodies: typed field readers and the booking entries planned from them. */

export const blank = (v: unknown): boolean =>
  v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/**
 * Typed readers over a body; a wrong type is recorded as a 422 message and reads as absent.
 * Nested entries prefix their error keys and name the entry in the message.
 */
export function reader(
  body: Record<string, unknown>,
  problems: FieldErrors,
  prefix = '',
  entry = '',
) {
  const label = (field: string) =>
    entry ? `${entry} ${humanize(field).toLowerCase()}` : humanize(field);
  const fail = (field: string, message: string) =>
    problems.add(`${prefix}${field}`, message, label(field));
  const numeric = (field: string, rule: NumberRule): number | undefined => {
    const v = body[field];
    if (blank(v)) return undefined;
    const read = readNumber(v, { ...rule, text: true });
    if (typeof read === 'string') {
      fail(field, read);
      return undefined;
    }
    return read;
  };
  const decimal = (field: string, max?: number): number | undefined =>
    numeric(field, max === undefined ? {} : { max });
  return {
    fail,
    str(field: string): string | null {
      const v = body[field];
      if (blank(v)) return null;
      if (typeof v === 'number') return String(v);
      if (typeof v !== 'string') {
        fail(field, 'must be a string');
        return null;
      }
      return v.trim();
    },
    bool(field: string): boolean | undefined {
      const v = body[field];
      if (blank(v)) return undefined;
      if (v === true || v === 'true' || v === 1 || v === '1') return true;
      if (v === false || v === 'false' || v === 0 || v === '0') return false;
      fail(field, 'must be true or false');
      return undefined;
    },
    int: (field: string, min = 1, max?: number): number | undefined =>
      numeric(field, max === undefined ? { integer: true, min } : { integer: true, min, max }),
    decimal,
    /** Money as a number or decimal string → cents, never negative. */
    cents(field: string): number | undefined {
      const n = numeric(field, AMOUNT);
      return n === undefined ? undefined : Math.round(n * 100);
    },
  };
}

/** The entries of quick_event_bookings_attributes in index order (an array is accepted too). */
export function bookingEntries(raw: unknown): [string, unknown][] | undefined {
  if (Array.isArray(raw)) return raw.map((v, i) => [String(i), v]);
  if (typeof raw !== 'object' || raw === null) return undefined;
  return Object.entries(raw as Record<string, unknown>).sort(
    ([a], [b]) => Number(a) - Number(b) || a.localeCompare(b),
  );
}

export function planBooking(
  ctx: SandboxContext,
  businessId: number,
  index: string,
  raw: unknown,
  problems: FieldErrors,
): BookingPlan | undefined {
  const prefix = `quick_event_bookings_attributes.${index}.`;
  const entryLabel = `Quick event booking ${index}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.add(`quick_event_bookings_attributes.${index}`, 'must be an object', entryLabel);
    return undefined;
  }
  const body = raw as Record<string, unknown>;
  const f = reader(body, problems, prefix, entryLabel);
  const tz = businessTimeZone(ctx.db, businessId);
  const before = problems.count;

  let pkg: StoredRecord<PackageAttrs> | undefined;
  const packageId = f.int('event_type_id');
  if (blank(body.event_type_id)) f.fail('event_type_id', "can't be blank");
  else if (packageId !== undefined) {
    pkg = getPackage(ctx.records, businessId, packageId);
    if (!pkg) f.fail('event_type_id', 'must exist');
  }

  let date: DateParts | undefined;
  if (blank(body.starts_at_date)) f.fail('starts_at_date', "can't be blank");
  else {
    date = parseMdy(body.starts_at_date) ?? parseYmd(body.starts_at_date);
    if (!date) f.fail('starts_at_date', `is not ${dateForm('MM-DD-YYYY')}`);
  }
  let startMinutes = 0;
  if (!blank(body.starts_at_time)) {
    const t = parseTime12(body.starts_at_time);
    if (t === undefined) f.fail('starts_at_time', 'is not a valid time (use h:mm AM/PM)');
    else startMinutes = t;
  }
  let endMinutes: number | undefined;
  if (!blank(body.ends_at_time)) {
    endMinutes = parseTime12(body.ends_at_time);
    if (endMinutes === undefined) f.fail('ends_at_time', 'is not a valid time (use h:mm AM/PM)');
  }
  const lengthInMinutes = f.decimal('length_in_minutes', MAX_LENGTH_MINUTES);
  if (lengthInMinutes !== undefined && lengthInMinutes <= 0) {
    f.fail('length_in_minutes', 'must be greater than 0');
  }
  const lengthInDays = f.int('length_in_days', 1, MAX_LENGTH_DAYS);
  const units = f.int('units');

  let backdrop: { id: number; name: string } | null = null;
  const backdropId = f.int('backdrop_id');
  if (backdropId !== undefined) {
    const found = getBackdrop(ctx.records, businessId, backdropId);
    if (found) backdrop = { id: found.id, name: found.attrs.name };
    else f.fail('backdrop_id', 'must exist');
  }

  const addOns: PlannedAddOn[] = [];
  const rawAddOns = body.add_on_ids;
  if (!blank(rawAddOns)) {
    const list = Array.isArray(rawAddOns) ? (rawAddOns as unknown[]) : [rawAddOns];
    for (const v of list) {
      const id =
        typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,15}$/.test(v) ? +v : NaN;
      if (!Number.isSafeInteger(id)) {
        f.fail('add_on_ids', 'must be a list of integers');
        break;
      }
      const addOn = getAddOn(ctx, businessId, id);
      if (!addOn) f.fail('add_on_ids', `contains an unknown add-on (${id})`);
      else addOns.push(plannedAddOn(addOn));
    }
  }

  const customTitle = f.str('one_off_custom_title');
  const customDescription = f.str('custom_description_html');
  if (pkg && !pkg.attrs.custom) {
    if (customTitle !== null)
      f.fail('one_off_custom_title', 'is only allowed for a custom package');
    if (customDescription !== null) {
      f.fail('custom_description_html', 'is only allowed for a custom package');
    }
  }
  if (problems.count > before || !pkg || !date) return undefined;

  const startMs = fromZoned(date, startMinutes, tz);
  const p = pkg.attrs;
  let endMs: number;
  let days: number | null = null;
  if (endMinutes !== undefined) {
    endMs = fromZoned(date, endMinutes, tz);
    // An end time at or before the start means the booking runs past midnight.
    if (endMs <= startMs) endMs = fromZoned(date, endMinutes + 1440, tz);
  } else if (p.price_method === 'daily') {
    days = lengthInDays ?? Math.max(1, Math.round(p.default_length_in_minutes / 1440));
    endMs = startMs + days * 86_400_000;
  } else {
    endMs = startMs + (lengthInMinutes ?? p.default_length_in_minutes) * 60_000;
  }
  return {
    pkg,
    startMs,
    endMs,
    overrideEnds: endMinutes !== undefined,
    lengthInDays:
      p.price_method === 'daily'
        ? (days ?? Math.max(1, Math.ceil((endMs - startMs) / 86_400_000)))
        : null,
    units: p.price_method === 'units' ? (units ?? 1) : null,
    backdrop,
    addOns,
    staffId: null,
    customTitle,
    customDescription,
  };
}

/**
 * A lead's own bookings (records of type 'lead_booking' under the lead), used when no entries
 * are sent: package, times, units, backdrop, add-ons (at the price they were quoted) and the
 * requested staff member carry over. Bookings without a package or a start are skipped.
 */
export function plansFromLead(
  ctx: SandboxContext,
  businessId: number,
  leadId: number,
): BookingPlan[] {
  const plans: BookingPlan[] = [];
  for (const r of ctx.records.children('lead_booking', leadId)) {
    const a = r.attrs;
    const pkg =
      typeof a.event_type_id === 'number'
        ? getPackage(ctx.records, businessId, a.event_type_id)
        : undefined;
    const startMs = typeof a.starts_at === 'string' ? Date.parse(a.starts_at) : NaN;
    if (!pkg || !Number.isFinite(startMs)) continue;
    const parsedEnd = typeof a.ends_at === 'string' ? Date.parse(a.ends_at) : NaN;
    const endMs =
      Number.isFinite(parsedEnd) && parsedEnd > startMs
        ? parsedEnd
        : startMs + pkg.attrs.default_length_in_minutes * 60_000;
    const backdrop =
      typeof a.photobooth_background_id === 'number'
        ? getBackdrop(ctx.records, businessId, a.photobooth_background_id)
        : undefined;
    const addOns = ctx.records.children('lead_add_on', r.id).flatMap((x): PlannedAddOn[] => {
      const { add_on_id, name, quantity, price_cents } = x.attrs;
      if (typeof add_on_id !== 'number') return [];
      const cents = typeof price_cents === 'number' ? price_cents : 0;
      return [
        {
          id: add_on_id,
          name: typeof name === 'string' ? name : '',
          quantity: typeof quantity === 'number' && quantity > 0 ? quantity : 1,
          priceCents: () => cents,
        },
      ];
    });
    plans.push({
      pkg,
      startMs,
      endMs,
      overrideEnds: false,
      lengthInDays:
        pkg.attrs.price_method === 'daily'
          ? Math.max(1, Math.ceil((endMs - startMs) / 86_400_000))
          : null,
      units:
        pkg.attrs.price_method === 'units' ? (typeof a.units === 'number' ? a.units : 1) : null,
      backdrop: backdrop ? { id: backdrop.id, name: backdrop.attrs.name } : null,
      addOns,
      staffId: typeof a.staff_id === 'number' ? a.staff_id : null,
      customTitle: null,
      customDescription: null,
    });
  }
  return plans;
}
