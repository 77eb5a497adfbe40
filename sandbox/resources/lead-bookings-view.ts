import type { LeadBookingInclude } from '../../api/schemas/lead-bookings.js';
import { canReadPricing, type Caller } from '../auth.js';
import type { SandboxContext } from '../context.js';
import { sql, type StoredRecord } from '../db.js';
import { item, money, refList, refOne, type Item } from '../envelope.js';
import { businessTimeZone, formattedRanges, longDate, time12 } from '../time.js';
import type { LeadAttrs } from './leads-model.js';
import { getBackdrop } from './offerings.js';
import type { LeadBookingAttrs, LeadAddOnAttrs } from './lead-bookings-model.js';
import { nameOf } from './lead-bookings.js';

/** Lead bookings and their add-ons as the API answers them. */

export class LeadView {
  readonly timeZone: string;
  readonly currency: string;
  private readonly leads = new Map<number, StoredRecord<LeadAttrs> | undefined>();
  private readonly brands = new Map<number, string | null>();

  constructor(
    readonly ctx: SandboxContext,
    readonly businessId: number,
    readonly pricing: boolean,
  ) {
    this.timeZone = businessTimeZone(ctx.db, businessId);
    const row = sql(ctx.db, 'SELECT currency FROM businesses WHERE id = ?').get(businessId) as
      { currency: string } | undefined;
    this.currency = row?.currency ?? 'USD';
  }

  static of(ctx: SandboxContext, caller: Caller): LeadView {
    return new LeadView(ctx, caller.businessId, canReadPricing(caller));
  }

  lead(id: number): StoredRecord<LeadAttrs> | undefined {
    if (!this.leads.has(id)) {
      this.leads.set(id, this.ctx.records.get<LeadAttrs>('lead', this.businessId, id));
    }
    return this.leads.get(id);
  }

  brandName(id: number): string | null {
    if (!this.brands.has(id)) this.brands.set(id, nameOf(this.ctx, 'brand', this.businessId, id));
    return this.brands.get(id) ?? null;
  }

  /** ms since the epoch of a stored zoned timestamp, or null. */
  static ms(iso: string | null): number | null {
    if (iso === null) return null;
    const ms = Date.parse(iso);
    return Number.isNaN(ms) ? null : ms;
  }

  /** formatted_* strings of a booking: empty without a date, date only without a time. */
  ranges(booking: LeadBookingAttrs): ReturnType<typeof formattedRanges> {
    const start = LeadView.ms(booking.starts_at);
    const end = LeadView.ms(booking.ends_at);
    if (start === null || booking.starts_at_minutes === null || end !== null) {
      return formattedRanges(start, end, this.timeZone, booking.starts_at_minutes !== null);
    }
    // A time and no length: the start alone.
    const at = time12(start, this.timeZone);
    return {
      formatted_date_range: longDate(start, this.timeZone),
      formatted_time_range: at,
      formatted_datetime_range: `${longDate(start, this.timeZone)} ${at}`,
    };
  }
}

/** The lead's name as staff see it: person, else company, else e-mail. */
export function leadDisplayName(
  lead: Pick<LeadAttrs, 'first_name' | 'last_name' | 'company_name' | 'email'>,
): string {
  const person = [lead.first_name, lead.last_name].filter(Boolean).join(' ').trim();
  return person || lead.company_name || lead.email;
}

/** Minutes after midnight → '6:00 PM'. */
function formattedUnits(units: number | null): string {
  if (units === null) return '';
  return `${units} ${units === 1 ? 'unit' : 'units'}`;
}

export function leadBookingAttributes(view: LeadView, record: StoredRecord<LeadBookingAttrs>) {
  const a = record.attrs;
  const lead = view.lead(a.lead_id);
  const who = lead ? leadDisplayName(lead.attrs) : '';
  const ranges = view.ranges(a);
  return {
    id: a.id,
    lead_id: a.lead_id,
    event_type_id: a.event_type_id,
    starts_at: a.starts_at,
    ends_at: a.ends_at,
    staff_id: a.staff_id,
    staff_name: a.staff_name,
    name: a.name,
    service_name: a.service_name,
    package_group_name: a.package_group_name,
    title: a.name ? `${who} - ${a.name}` : who,
    brand_name: view.brandName(a.brand_id),
    date_mode: 'date_time',
    length_in_minutes: a.length_in_minutes,
    length_in_days: a.length_in_days,
    units: a.units,
    package_unit_range_id: a.package_unit_range_id,
    // The sandbox has no unit-range records to describe; the id round-trips.
    event_type_unit_range: null,
    formatted_date_range: ranges.formatted_date_range,
    formatted_time_range: ranges.formatted_time_range,
    formatted_units: formattedUnits(a.units),
    preview_image: a.preview_image,
  };
}

/** What a lead booking's relationships name, by booking id. */
export interface BookingChildren {
  readonly lead_add_on: ReadonlyMap<number, readonly StoredRecord<LeadAddOnAttrs>[]>;
  readonly lead_extra: ReadonlyMap<number, readonly StoredRecord[]>;
  readonly lead_booking_extra_category: ReadonlyMap<number, readonly StoredRecord[]>;
}
type BookingChildType = keyof BookingChildren;

/** The children a lead booking's relationships name, for many bookings at once (3 queries). */
export function bookingChildren(
  ctx: SandboxContext,
  bookings: readonly StoredRecord<LeadBookingAttrs>[],
): BookingChildren {
  const ids = bookings.map((booking) => booking.id);
  return {
    lead_add_on: ctx.records.childrenOfMany<LeadAddOnAttrs>('lead_add_on', ids),
    lead_extra: ctx.records.childrenOfMany('lead_extra', ids),
    lead_booking_extra_category: ctx.records.childrenOfMany('lead_booking_extra_category', ids),
  };
}

/**
 * A lead booking as an item. A page of them passes the children of all its bookings
 * (`bookingChildren`), read at once; alone, a booking's are read for it.
 */
export function leadBookingItem(
  view: LeadView,
  record: StoredRecord<LeadBookingAttrs>,
  children: BookingChildren = bookingChildren(view.ctx, [record]),
): Item {
  const idsOf = (type: BookingChildType) => (children[type].get(record.id) ?? []).map((r) => r.id);
  return item('lead_booking', leadBookingAttributes(view, record), {
    lead_add_ons: refList('lead_add_on', idsOf('lead_add_on')),
    lead_extras: refList('lead_extra', idsOf('lead_extra')),
    lead_booking_extra_categories: refList(
      'lead_booking_extra_category',
      idsOf('lead_booking_extra_category'),
    ),
    photobooth_background: refOne('photobooth_background', record.attrs.photobooth_background_id),
  });
}

export function leadAddOnItem(view: LeadView, record: StoredRecord<LeadAddOnAttrs>): Item {
  const a = record.attrs;
  return item(
    'lead_add_on',
    {
      id: a.id,
      lead_booking_id: a.lead_booking_id,
      add_on_id: a.add_on_id,
      name: a.name,
      quantity: a.quantity,
      ...money('price', view.pricing ? a.price_cents : null, view.currency),
    },
    { add_on: refOne('add_on', a.add_on_id) },
  );
}

/** Sideloaded records for bookings, each once. */
export function leadBookingIncluded(
  view: LeadView,
  bookings: readonly StoredRecord<LeadBookingAttrs>[],
  include: ReadonlySet<LeadBookingInclude>,
  children: BookingChildren = bookingChildren(view.ctx, bookings),
): Item[] {
  const { ctx } = view;
  const out = new Map<string, Item>();
  const add = (it: Item) => out.set(`${it.type}:${it.id}`, it);
  const plain = (type: string, r: StoredRecord) => item(type, { ...r.attrs, id: r.id });
  for (const booking of bookings) {
    const of = (type: Exclude<BookingChildType, 'lead_add_on'>) =>
      children[type].get(booking.id) ?? [];
    if (include.has('lead_add_ons')) {
      for (const r of children.lead_add_on.get(booking.id) ?? []) add(leadAddOnItem(view, r));
    }
    if (include.has('lead_extras')) {
      for (const r of of('lead_extra')) add(plain('lead_extra', r));
    }
    const nested = include.has('lead_booking_extra_categories.lead_extras');
    if (include.has('lead_booking_extra_categories') || nested) {
      for (const category of of('lead_booking_extra_category')) {
        // A category's extras are the booking's extras that name it.
        const extras = of('lead_extra').filter(
          (extra) => extra.attrs.lead_booking_extra_category_id === category.id,
        );
        const it = plain('lead_booking_extra_category', category);
        it.relationships = {
          lead_extras: refList(
            'lead_extra',
            extras.map((e) => e.id),
          ),
        };
        add(it);
        if (nested) for (const extra of extras) add(plain('lead_extra', extra));
      }
    }
    const backdropId = booking.attrs.photobooth_background_id;
    if (include.has('photobooth_background') && backdropId !== null) {
      const backdrop = getBackdrop(ctx.records, booking.businessId, backdropId);
      if (backdrop) add(item('photobooth_background', backdrop.attrs));
    }
  }
  return [...out.values()];
}
