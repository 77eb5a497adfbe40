import type { SandboxContext } from '../context.js';
import { sql, type RecordAttrs } from '../db.js';

/**
 * Leads: inquiries from prospective customers.
 *
 * Record type `lead` (owned by the business): LeadAttrs below — what was asked for plus what
 * the service keeps (origin, token, flags, contact counters, brand). The event date, time,
 * length and package live on the lead's bookings (`lead_booking`, see lead-bookings-model.ts); the
 * lead's own `package_id`/`service_id` only remember what was first asked for. `email` is kept
 * trimmed and lower-cased (the email filter matches it exactly, through its index).
 * Record type `brand`: { id, name } — one default brand per business, made on first use.
 */

/** What an answer may be; null in a PATCH clears the answer. */
export type AnswerValue = string | number | boolean | string[];

export interface LeadAttrs extends RecordAttrs {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
  company_name: string | null;
  phone: string | null;
  phone_normalized: string | null;
  staff_id: number | null;
  /** lead_source of the create body. */
  source: string | null;
  contact_preference: ContactPreference | null;
  lead_type: string | null;
  notes: string | null;
  estimated_budget: number | null;
  estimated_number_guests: number | null;
  venue_name: string | null;
  venue_address: string | null;
  venue_city: string | null;
  venue_state: string | null;
  venue_zip: string | null;
  venue_latitude: number | null;
  venue_longitude: number | null;
  venue_place_id: string | null;
  indoor_outdoor: IndoorOutdoor | null;
  service_id: number | null;
  package_id: number | null;
  referred_by_user_id: number | null;
  next_follow_up_on: string | null;
  subject: string | null;
  message: string | null;
  utm_source: string | null;
  utm_campaign: string | null;
  utm_medium: string | null;
  utm_term: string | null;
  utm_content: string | null;
  ad_click_id: string | null;
  /** Answers to the business's booking questions, keyed by column_name. */
  custom_questions: Record<string, AnswerValue>;
  contact_form_id: number | null;
  lead_event_type: string | null;
  origin: string;
  token: string;
  /** Zoned ISO timestamp. */
  created_at: string;
  brand_id: number;
  spam: boolean;
  archived: boolean;
  converted_to_event: boolean;
  times_contacted: number;
  last_contact_at: string | null;
}

/** Stand-ins where the spec names a third party's value without giving it. */
export const AUTOMATION_PLATFORM_SOURCE = 'Automation Platform';
export const DIRECTORY_SOURCE = 'Directory Listing';

export const LEAD_SOURCES = [
  'Manual Entry',
  'Lead Form',
  'Online Booking',
  'App',
  AUTOMATION_PLATFORM_SOURCE,
  'API',
  DIRECTORY_SOURCE,
] as const;
export const CONTACT_PREFERENCES = ['Email', 'Phone', 'Text Message'] as const;
export type ContactPreference = (typeof CONTACT_PREFERENCES)[number];
export const INDOOR_OUTDOOR = ['Indoor', 'Outdoor'] as const;
export type IndoorOutdoor = (typeof INDOOR_OUTDOOR)[number];

/** A new lead's fields, validated (readLeadInput does that for HTTP bodies). */
export interface LeadInput {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  company_name?: string | null;
  phone?: string | null;
  staff_id?: number | null;
  lead_source?: string | null;
  contact_preference?: ContactPreference | null;
  lead_type?: string | null;
  notes?: string | null;
  /** YYYY-MM-DD */
  event_date?: string | null;
  /** '6:00 PM' */
  event_time?: string | null;
  length_in_minutes?: number | null;
  estimated_budget?: number | null;
  estimated_number_guests?: number | null;
  venue_name?: string | null;
  venue_address?: string | null;
  venue_city?: string | null;
  venue_state?: string | null;
  venue_zip?: string | null;
  indoor_outdoor?: IndoorOutdoor | null;
  service_id?: number | null;
  package_id?: number | null;
  referred_by_user_id?: number | null;
  next_follow_up_on?: string | null;
  subject?: string | null;
  message?: string | null;
  utm_source?: string | null;
  utm_campaign?: string | null;
  utm_medium?: string | null;
  utm_term?: string | null;
  utm_content?: string | null;
  ad_click_id?: string | null;
  custom_questions?: Record<string, AnswerValue | null>;
  contact_form_id?: number | null;
}

export interface CreateLeadOptions {
  /** Defaults to 'API'. */
  origin?: string;
  /** ms since the epoch or an ISO string; defaults to now. */
  createdAt?: number | string;
  spam?: boolean;
  archived?: boolean;
  converted_to_event?: boolean;
  lead_event_type?: string | null;
  times_contacted?: number;
  /** Zoned ISO time staff last reached the lead (with times_contacted). */
  last_contact_at?: string | null;
  /** Recorded change notifications (webhooks) are skipped for bulk seeding. */
  silent?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Storage helpers

const LEAD_DEFAULTS: Omit<LeadAttrs, 'id' | 'email' | 'token' | 'created_at' | 'brand_id'> = {
  first_name: null,
  last_name: null,
  company_name: null,
  phone: null,
  phone_normalized: null,
  staff_id: null,
  source: null,
  contact_preference: null,
  lead_type: null,
  notes: null,
  estimated_budget: null,
  estimated_number_guests: null,
  venue_name: null,
  venue_address: null,
  venue_city: null,
  venue_state: null,
  venue_zip: null,
  venue_latitude: null,
  venue_longitude: null,
  venue_place_id: null,
  indoor_outdoor: null,
  service_id: null,
  package_id: null,
  referred_by_user_id: null,
  next_follow_up_on: null,
  subject: null,
  message: null,
  utm_source: null,
  utm_campaign: null,
  utm_medium: null,
  utm_term: null,
  utm_content: null,
  ad_click_id: null,
  custom_questions: {},
  contact_form_id: null,
  lead_event_type: null,
  origin: 'API',
  spam: false,
  archived: false,
  converted_to_event: false,
  times_contacted: 0,
  last_contact_at: null,
};

const LEAD_DEFAULT_KEYS = Object.keys(LEAD_DEFAULTS);

/**
 * A stored lead with every field present (records written directly may omit some). A
 * complete lead, the usual case, is returned as it is: copying 49 fields per lead was a
 * large share of a list page.
 */
export function withLeadDefaults(attrs: LeadAttrs): LeadAttrs {
  if (LEAD_DEFAULT_KEYS.every((key) => attrs[key] !== undefined)) return attrs;
  const out: LeadAttrs = { ...LEAD_DEFAULTS, ...attrs };
  for (const [key, value] of Object.entries(LEAD_DEFAULTS)) {
    if (out[key] === undefined) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** The business's default brand (every lead belongs to it). */
export function defaultBrand(
  ctx: SandboxContext,
  businessId: number,
): { id: number; name: string } {
  const row = sql(
    ctx.db,
    "SELECT id, json_extract(attrs, '$.name') AS name FROM records WHERE type = 'brand' AND business_id = ? AND deleted_at IS NULL ORDER BY id LIMIT 1",
  ).get(businessId) as { id: number; name: string } | undefined;
  if (row) return row;
  const business = sql(ctx.db, 'SELECT name FROM businesses WHERE id = ?').get(businessId) as
    { name: string } | undefined;
  const brand = ctx.records.insert(
    'brand',
    businessId,
    (id) => ({ id, name: business?.name ?? 'Default brand' }),
    { silent: true },
  );
  return { id: brand.id, name: brand.attrs.name };
}

/** '+15551234567' for North American numbers, '+<digits>' when sent with a +, else digits. */
export function normalizePhone(phone: string | null): string | null {
  if (phone === null) return null;
  const digits = phone.replace(/\D/g, '');
  if (digits === '') return null;
  if (phone.trim().startsWith('+')) return `+${digits}`;
  if (digits.length === 10) return `+1${digits}`;
  if (digits.length === 11 && digits.startsWith('1')) return `+${digits}`;
  return digits;
}
