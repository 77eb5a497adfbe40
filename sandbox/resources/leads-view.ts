import { sql, type StoredRecord } from '../db.js';
import { item, refList, single, type Item } from '../envelope.js';
import { clock12, ymd } from '../time.js';
import { bookingsOfLeads } from './lead-bookings.js';
import {
  bookingChildren,
  leadBookingItem,
  leadDisplayName,
  LeadView,
} from './lead-bookings-view.js';
import type { LeadBookingAttrs } from './lead-bookings-model.js';
import { customFields } from './lead-questions.js';
import { getPackage } from './offerings.js';
import { type LeadAttrs, withLeadDefaults } from './leads-model.js';

/** Leads as the API answers them: attributes, items and the single-lead body. */

const RESUME_BOOKING_BASE = 'https://book.sandbox.example/leads';
const MAP_SEARCH_BASE = 'https://maps.example.com/?q=';

const PLURAL = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Rails' time_ago_in_words, which the service uses for *_description fields. */
export function timeAgoInWords(fromMs: number, nowMs: number): string {
  const minutes = Math.round(Math.max(0, nowMs - fromMs) / 60_000);
  if (minutes < 1) return 'less than a minute ago';
  if (minutes < 45) return `${PLURAL(minutes, 'minute')} ago`;
  if (minutes < 90) return 'about 1 hour ago';
  if (minutes < 1440) return `about ${PLURAL(Math.round(minutes / 60), 'hour')} ago`;
  if (minutes < 2520) return '1 day ago';
  if (minutes < 43_200) return `${PLURAL(Math.round(minutes / 1440), 'day')} ago`;
  if (minutes < 86_400) return `about ${PLURAL(Math.round(minutes / 43_200), 'month')} ago`;
  if (minutes < 525_600) return `${PLURAL(Math.round(minutes / 43_200), 'month')} ago`;
  const years = Math.floor(minutes / 525_600);
  const rest = minutes % 525_600;
  if (rest < 131_400) return `about ${PLURAL(years, 'year')} ago`;
  if (rest < 394_200) return `over ${PLURAL(years, 'year')} ago`;
  return `almost ${PLURAL(years + 1, 'year')} ago`;
}

/** '3 hours', '1 hour 30 minutes', '2 days'; null without a length. */
function lengthWords(minutes: number | null, days: number | null): string | null {
  if (minutes === null) return days === null ? null : PLURAL(days, 'day');
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  const parts = [h > 0 ? PLURAL(h, 'hour') : '', m > 0 || h === 0 ? PLURAL(m, 'minute') : ''];
  return parts.filter(Boolean).join(' ');
}

function mapUrl(a: LeadAttrs): string | null {
  const parts = [a.venue_name, a.venue_address, a.venue_city, a.venue_state, a.venue_zip].filter(
    (p): p is string => Boolean(p),
  );
  return parts.length === 0 ? null : `${MAP_SEARCH_BASE}${encodeURIComponent(parts.join(', '))}`;
}

/**
 * A lead's attributes, with its primary booking's date, time, length, package and service
 * fields flattened in (without a booking they come from what the lead asked for, or are empty).
 */
export function leadAttributes(
  view: LeadView,
  record: StoredRecord<LeadAttrs>,
  primary: StoredRecord<LeadBookingAttrs> | undefined,
) {
  const { ctx } = view;
  const a = withLeadDefaults(record.attrs);
  const b = primary?.attrs;
  const start = LeadView.ms(b?.starts_at ?? null);
  const ranges = b
    ? view.ranges(b)
    : { formatted_date_range: '', formatted_time_range: '', formatted_datetime_range: '' };
  const pkg =
    !b && a.package_id !== null
      ? getPackage(ctx.records, record.businessId, a.package_id)
      : undefined;
  const serviceName =
    b?.service_name ??
    (a.service_id !== null
      ? (ctx.records.get('service', record.businessId, a.service_id)?.attrs.name as
          string | undefined)
      : undefined) ??
    pkg?.attrs.service_name ??
    null;
  const minutes = b?.length_in_minutes ?? null;
  const referrer =
    a.referred_by_user_id === null
      ? undefined
      : (sql(ctx.db, 'SELECT name, email FROM users WHERE id = ?').get(a.referred_by_user_id) as
          { name: string; email: string } | undefined);
  const createdMs = Date.parse(a.created_at);
  return {
    id: a.id,
    email: a.email,
    first_name: a.first_name,
    last_name: a.last_name,
    company_name: a.company_name,
    phone: a.phone,
    phone_normalized: a.phone_normalized,
    event_date: start === null ? null : ymd(start, view.timeZone),
    event_time:
      b === undefined || b.starts_at_minutes === null ? null : clock12(b.starts_at_minutes),
    venue_name: a.venue_name,
    venue_address: a.venue_address,
    venue_city: a.venue_city,
    venue_state: a.venue_state,
    venue_zip: a.venue_zip,
    venue_map_url: mapUrl(a),
    venue_latitude: a.venue_latitude,
    venue_longitude: a.venue_longitude,
    venue_place_id: a.venue_place_id,
    estimated_budget: a.estimated_budget,
    estimated_number_guests: a.estimated_number_guests,
    subject: a.subject,
    message: a.message,
    source: a.source,
    notes: a.notes,
    lead_event_type: a.lead_event_type,
    lead_type: a.lead_type,
    last_contact_at: a.last_contact_at,
    times_contacted: a.times_contacted,
    next_follow_up_on: a.next_follow_up_on,
    origin: a.origin,
    length_in_hours: minutes === null ? null : Math.round((minutes / 60) * 100) / 100,
    length_in_minutes: minutes,
    length_in_days: b?.length_in_days ?? null,
    length: lengthWords(minutes, b?.length_in_days ?? null),
    indoor_outdoor: a.indoor_outdoor,
    starts_at: b?.starts_at ?? null,
    ends_at: b?.ends_at ?? null,
    setup_at: null,
    pickup_at: null,
    dropoff_at: null,
    title: leadDisplayName(a),
    brand_id: a.brand_id,
    brand_name: view.brandName(a.brand_id),
    created_at: a.created_at,
    token: a.token,
    spam: a.spam,
    archived: a.archived,
    converted_to_event: a.converted_to_event,
    event_type_id: b ? b.event_type_id : a.package_id,
    utm_source: a.utm_source,
    utm_campaign: a.utm_campaign,
    utm_medium: a.utm_medium,
    utm_term: a.utm_term,
    utm_content: a.utm_content,
    ad_click_id: a.ad_click_id,
    package_name: b ? b.name : (pkg?.attrs.name ?? null),
    package_group_name: b ? b.package_group_name : (pkg?.attrs.package_group_name ?? null),
    service_name: serviceName,
    formatted_time_range: ranges.formatted_time_range,
    formatted_date_range: ranges.formatted_date_range,
    formatted_datetime_range: ranges.formatted_datetime_range,
    custom_fields: customFields(ctx, record),
    created_at_description: Number.isNaN(createdMs)
      ? ''
      : timeAgoInWords(createdMs, ctx.clock.now()),
    referred_by_user_id: a.referred_by_user_id,
    referred_by_user_name: referrer?.name ?? null,
    referred_by_user_email: referrer?.email ?? null,
    resume_booking_link: `${RESUME_BOOKING_BASE}/${a.token}/resume`,
  };
}

/**
 * A lead item. `bookings` are its live bookings in id order (the first is primary);
 * relationships.lead_bookings is filled when `withBookingRefs` (single reads, include).
 */
export function leadItem(
  view: LeadView,
  record: StoredRecord<LeadAttrs>,
  bookings: readonly StoredRecord<LeadBookingAttrs>[],
  withBookingRefs: boolean,
): Item {
  return item(
    'lead',
    leadAttributes(view, record, bookings[0]),
    withBookingRefs
      ? {
          lead_bookings: refList(
            'lead_booking',
            bookings.map((b) => b.id),
          ),
        }
      : {},
  );
}

/** A single lead as GET /leads/{id} answers it (optionally with its bookings sideloaded). */
export function leadBody(view: LeadView, record: StoredRecord<LeadAttrs>, sideload = false) {
  const bookings = bookingsOfLeads(view.ctx, [record.id]).get(record.id) ?? [];
  const children = sideload ? bookingChildren(view.ctx, bookings) : undefined;
  return single(
    leadItem(view, record, bookings, true),
    children ? bookings.map((b) => leadBookingItem(view, b, children)) : undefined,
  );
}
