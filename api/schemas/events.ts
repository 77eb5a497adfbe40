import { z } from 'zod';
import { itemSchema, moneyFields, nullableBool, nullableInt, nullableString } from './envelope.js';
import {
  amountSchema,
  idSchema,
  mdySchema,
  pagingQueryFields,
  time12Schema,
  ymdSchema,
} from './formats.js';

const loose = z.unknown().optional();
const numberish = z.union([z.number(), z.string()]).nullable().optional();

/** event attributes (spec: "event (type event)"). status is an open enum: any string is kept. */
export const eventAttributesSchema = z.looseObject({
  id: z.number().int(),
  title: nullableString,
  /** Values seen: confirmed, proposal_date_reserved. */
  status: nullableString,
  formatted_status: nullableString,
  formatted_status_with_context: nullableString,
  booked_at: nullableString,
  created_at: nullableString,
  created_via: nullableString,
  venue_name: nullableString,
  venue_address: nullableString,
  venue_city: nullableString,
  venue_state: nullableString,
  venue_zip: nullableString,
  venue_map_url: nullableString,
  venue_place_id: nullableString,
  public_notes: nullableString,
  private_notes: nullableString,
  coupon_code: nullableString,
  photo_album_url: nullableString,
  photo_album_instructions: nullableString,
  video_url: nullableString,
  video_album_instructions: nullableString,
  completed: nullableBool,
  canceled: nullableBool,
  postponed: nullableBool,
  invoice_number: z.union([z.string(), z.number()]).nullable().optional(),
  billable_distance: numberish,
  total_distance: numberish,
  distance_unit: nullableString,
  latitude: numberish,
  longitude: numberish,
  /** Decimal string. */
  tax_rate: numberish,
  source: nullableString,
  estimated_number_guests: numberish,
  indoor_outdoor: nullableString,
  lead_event_type: nullableString,
  contact_preference: nullableString,
  po_number: nullableString,
  stair_setup: loose,
  token: nullableString,
  utm_source: nullableString,
  utm_campaign: nullableString,
  utm_medium: nullableString,
  utm_term: nullableString,
  utm_content: nullableString,
  ad_click_id: nullableString,
  starts_at: nullableString,
  ends_at: nullableString,
  length_in_minutes: numberish,
  length_in_hours: numberish,
  ...moneyFields('starting_balance'),
  ...moneyFields('deposit_amount_due'),
  ...moneyFields('custom_deposit_amount'),
  ...moneyFields('balance_amount_due'),
  /** MM-DD-YYYY */
  starts_at_date: nullableString,
  starts_at_date_iso8601: nullableString,
  starts_at_time: nullableString,
  invoice_date: nullableString,
  invoice_date_iso8601: nullableString,
  proposal_valid_through: nullableString,
  package_name: nullableString,
  package_group_name: nullableString,
  service_name: nullableString,
  package_description_html: nullableString,
  add_on_names: nullableString,
  backdrop_names: nullableString,
  design_statuses: loose,
  due_at: nullableString,
  // The spec writes these list-like fields as strings.
  customer_ids: nullableString,
  customer_names: nullableString,
  customer_emails: nullableString,
  customer_phones: nullableString,
  customer_and_contact_ids: nullableString,
  customer_and_contact_names: nullableString,
  customer_and_contact_emails: nullableString,
  customer_and_contact_phones: nullableString,
  additional_contact_ids: nullableString,
  additional_contact_names: nullableString,
  additional_contact_emails: nullableString,
  additional_contact_phones: nullableString,
  assigned_staff_ids: nullableString,
  assigned_staff_names: nullableString,
  assigned_staff_abbreviations: nullableString,
  assigned_staff_emails: nullableString,
  change_summary: loose,
  brand_id: nullableInt,
  brand_name: nullableString,
  primary_image: z.looseObject({ hero_variant: loose }).nullable().optional(),
  booked_at_description: nullableString,
  current_user_assigned: nullableBool,
  event_url: nullableString,
  proposal_url: nullableString,
  referred_by_user_id: nullableInt,
  referred_by_user_name: nullableString,
  referred_by_user_email: nullableString,
});
export type EventAttributes = z.infer<typeof eventAttributesSchema>;
export const eventSchema = itemSchema(eventAttributesSchema);
export type Event = z.infer<typeof eventSchema>;

/** event_autocomplete: what event creation returns. */
export const eventAutocompleteSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    title: nullableString,
    status: nullableString,
    formatted_status: nullableString,
    /** Null for a proposal. */
    booked_at: nullableString,
    starts_at: nullableString,
    ends_at: nullableString,
    starts_at_date: nullableString,
    starts_at_time: nullableString,
    preview_images: z
      .array(z.looseObject({ event_type_variant: loose }))
      .nullable()
      .optional(),
  }),
);
export type EventAutocomplete = z.infer<typeof eventAutocompleteSchema>;

/** event_booking attributes (spec: "event_booking (type event_booking)"). */
export const eventBookingAttributesSchema = z.looseObject({
  id: z.number().int(),
  event_id: nullableInt,
  event_type_id: nullableInt,
  title: nullableString,
  name: nullableString,
  starts_at: nullableString,
  ends_at: nullableString,
  /** Value seen: confirmed. */
  status: nullableString,
  formatted_status: nullableString,
  formatted_status_with_context: nullableString,
  brand_name: nullableString,
  canceled: nullableBool,
  postponed: nullableBool,
  date_mode: nullableString,
  description_html: nullableString,
  override_ends_at: loose,
  /** Decimal string. */
  length_in_minutes: numberish,
  length_in_days: numberish,
  event_type_unit_range: loose,
  units: numberish,
  formatted_datetime_range: nullableString,
  formatted_date_range: nullableString,
  formatted_time_range: nullableString,
  formatted_units: nullableString,
  staff_member_abbreviations: loose,
  expired_proposal: nullableBool,
  primary_image_attachment: z.looseObject({ video_variant: loose }).nullable().optional(),
  package_group_name: nullableString,
  service_name: nullableString,
  ...moneyFields('override_price'),
  taxable: nullableBool,
});
export type EventBookingAttributes = z.infer<typeof eventBookingAttributesSchema>;
export const eventBookingSchema = itemSchema(eventBookingAttributesSchema);
export type EventBooking = z.infer<typeof eventBookingSchema>;

export const eventBookingListQuerySchema = z.strictObject({
  event_date_start: ymdSchema.optional(),
  event_date_end: ymdSchema.optional(),
  ...pagingQueryFields,
});
export type EventBookingListQuery = z.input<typeof eventBookingListQuerySchema>;

export const CONTACT_TYPES = ['New Customer', 'Existing Customer', 'None'] as const;
export type ContactType = (typeof CONTACT_TYPES)[number];

/** One entry of quick_event_bookings_attributes. */
export const quickEventBookingSchema = z.strictObject({
  /** The package. */
  event_type_id: idSchema,
  /** MM-DD-YYYY: event creation is the one place that takes month-day-year. */
  starts_at_date: mdySchema,
  starts_at_time: time12Schema.optional(),
  /** Blank means computed from the package. */
  ends_at_time: z.union([time12Schema, z.literal('')]).optional(),
  length_in_minutes: z.number().int().positive().optional(),
  length_in_days: z.number().int().positive().optional(),
  units: z.number().int().positive().optional(),
  backdrop_id: idSchema.optional(),
  add_on_ids: z.array(idSchema).optional(),
  /** Custom packages only. */
  one_off_custom_title: z.string().optional(),
  custom_description_html: z.string().optional(),
});
export type QuickEventBooking = z.input<typeof quickEventBookingSchema>;

const coordinate = z.union([z.number().finite(), z.string().regex(/^-?\d+(\.\d+)?$/)]);

/** POST /api/v1/events body. */
export const createEventBodySchema = z
  .strictObject({
    is_proposal: z.boolean().optional(),
    proposal_date_reserved: z.boolean().optional(),
    signature_collected: z.boolean().optional(),
    custom_title: z.string().optional(),
    total_amount: amountSchema.optional(),
    paid_amount: amountSchema.optional(),
    custom_deposit_amount: amountSchema.optional(),
    venue_place_id: z.string().optional(),
    venue_latitude: coordinate.optional(),
    venue_longitude: coordinate.optional(),
    venue_name: z.string().optional(),
    venue_address: z.string().optional(),
    venue_city: z.string().optional(),
    venue_state: z.string().optional(),
    venue_zip: z.string().optional(),
    contact_type: z.enum(CONTACT_TYPES),
    customer_user_id: idSchema.optional(),
    contact_name: z.string().optional(),
    contact_email: z.email().optional(),
    contact_company_name: z.string().optional(),
    contact_description: z.string().optional(),
    contact_phone: z.string().optional(),
    contact_street: z.string().optional(),
    contact_city: z.string().optional(),
    contact_state_code: z.string().optional(),
    contact_postal_code: z.string().optional(),
    public_notes: z.string().optional(),
    private_notes: z.string().optional(),
    add_tax: z.boolean().optional(),
    add_travel: z.boolean().optional(),
    /** Format not shown in the spec. */
    proposal_valid_through: z.string().optional(),
    send_contact_invitation_to_create_account: z.boolean().optional(),
    send_booking_confirmation_emails: z.boolean().optional(),
    lead_id: idSchema.optional(),
    brand_id: idSchema.optional(),
    /** Keyed by index as a string: { "0": first, "1": second }. See `quickEventBookings()`. */
    quick_event_bookings_attributes: z
      .record(z.string().regex(/^\d+$/, 'keys are indexes: 0, 1, ...'), quickEventBookingSchema)
      .optional(),
  })
  .superRefine((body, ctx) => {
    const proposal = body.is_proposal === true;
    // Options the spec reserves for confirmed bookings (or proposals) are refused, not ignored.
    const confirmedOnly = [
      'signature_collected',
      'send_booking_confirmation_emails',
      'send_contact_invitation_to_create_account',
    ] as const;
    if (proposal) {
      for (const name of confirmedOnly) {
        if (body[name] === true) {
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: 'applies to a confirmed booking only (is_proposal false)',
          });
        }
      }
    } else if (body.proposal_date_reserved === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['proposal_date_reserved'],
        message: 'applies to a proposal only (is_proposal true)',
      });
    }
    if (
      body.send_contact_invitation_to_create_account === true &&
      body.contact_type !== 'New Customer'
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['send_contact_invitation_to_create_account'],
        message: "applies to a new customer only (contact_type 'New Customer')",
      });
    }
    if (body.contact_type === 'Existing Customer' && body.customer_user_id === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['customer_user_id'],
        message: "is required when contact_type is 'Existing Customer'",
      });
    }
  });
export type CreateEventBody = z.input<typeof createEventBodySchema>;

/** quick_event_bookings_attributes from a list: { "0": first, "1": second, ... }. */
export function quickEventBookings(
  entries: readonly QuickEventBooking[],
): Record<string, QuickEventBooking> {
  return Object.fromEntries(entries.map((entry, index) => [String(index), entry]));
}
