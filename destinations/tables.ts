import { RESOURCES, type ColumnType, type Resource } from './record.js';

/**
 * The mirror's tables, column by column: the one list the normalizer fills and every
 * database destination creates. Columns are the spec's scalar attributes under their own
 * names; presentation strings (`formatted_*`, `*_description`, `*_html`), tokens and links
 * carrying them stay only in the `record` JSON. Adding a column here is all a schema change
 * takes: `ensureSchema` adds it to existing tables (never drops or retypes one).
 */
export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  /** The service attribute it comes from, when not the one of the same name. */
  readonly from?: string;
  /** Indexed, for the joins and lookups people run most (foreign keys, e-mail). */
  readonly indexed?: true;
  readonly description: string;
}

export interface TableSpec {
  readonly resource: Resource;
  /** Table name (equal to the resource name). */
  readonly table: string;
  readonly columns: readonly ColumnSpec[];
}

/** Columns every table has besides its attributes, written by the destination itself. */
export const SYSTEM_COLUMNS = [
  { name: 'id', type: 'text', description: "The service's id (primary key)." },
  { name: 'record', type: 'json', description: 'The whole canonical record.' },
  {
    name: 'deleted_at',
    type: 'timestamp',
    description: 'When ebsync found the record deleted at the service; NULL while it exists.',
  },
  {
    name: 'synced_at',
    type: 'timestamp',
    description: 'When ebsync last wrote a change to this row (unchanged records keep theirs).',
  },
] as const satisfies readonly ColumnSpec[];

const text = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'text',
  description,
});
const int = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'integer',
  description,
});
const num = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'number',
  description,
});
const bool = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'boolean',
  description,
});
const at = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'timestamp',
  description,
});
const json = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'json',
  description,
});
const fk = (name: string, description: string): ColumnSpec => ({
  name,
  type: 'integer',
  indexed: true,
  description,
});

/** `<name>_cents` and `<name>_currency` from the spec's money quadruple. */
function money(name: string, description: string): ColumnSpec[] {
  return [
    { name: `${name}_cents`, type: 'cents', description: `${description}, in cents.` },
    { name: `${name}_currency`, type: 'text', description: `Currency of ${name}_cents.` },
  ];
}

const venue = [
  text('venue_name', 'Venue name.'),
  text('venue_address', 'Venue street address.'),
  text('venue_city', 'Venue city.'),
  text('venue_state', 'Venue state or region.'),
  text('venue_zip', 'Venue postal code.'),
  text('venue_map_url', 'Map link of the venue.'),
  text('venue_place_id', 'Place id of the venue.'),
];

const utm = [
  text('utm_source', 'UTM source of the enquiry.'),
  text('utm_campaign', 'UTM campaign.'),
  text('utm_medium', 'UTM medium.'),
  text('utm_term', 'UTM term.'),
  text('utm_content', 'UTM content.'),
  text('ad_click_id', 'Ad click id.'),
];

const referral = [
  int('referred_by_user_id', 'Referring user id.'),
  text('referred_by_user_name', 'Referring user name.'),
  text('referred_by_user_email', 'Referring user e-mail.'),
];

const packageNames = [
  text('package_name', 'Package of the primary booking.'),
  text('package_group_name', 'Package group of the primary booking.'),
  text('service_name', 'Service of the primary booking.'),
];

const leads: ColumnSpec[] = [
  { ...text('email', 'Contact e-mail.'), indexed: true },
  text('first_name', 'Contact first name.'),
  text('last_name', 'Contact last name.'),
  text('company_name', 'Company name.'),
  text('phone', 'Phone as entered.'),
  text('phone_normalized', 'Phone in normalized form.'),
  { name: 'event_date', type: 'date', description: 'Date of the event asked about.' },
  text('event_time', 'Time of the event as entered.'),
  ...venue,
  num('venue_latitude', 'Venue latitude.'),
  num('venue_longitude', 'Venue longitude.'),
  // The canonical record already names it so (records/canonical.ts, BARE_MONEY_FIELDS): a
  // `from` of the service's 'estimated_budget' read an attribute no record has.
  { name: 'estimated_budget_cents', type: 'cents', description: 'Estimated budget, in cents.' },
  int('estimated_number_guests', 'Estimated number of guests.'),
  text('subject', 'Subject of the enquiry.'),
  text('message', 'Message of the enquiry.'),
  text('source', 'Lead source.'),
  text('notes', 'Notes.'),
  text('lead_event_type', 'Kind of event.'),
  text('lead_type', 'Lead type.'),
  at('last_contact_at', 'Last contact.'),
  int('times_contacted', 'Times contacted (0 for a new lead).'),
  { name: 'next_follow_up_on', type: 'date', description: 'Next follow-up day.' },
  text('origin', 'Where the lead came from (Lead Form, App, API, Online Booking, ...).'),
  num('length_in_minutes', 'Length of the primary booking, minutes.'),
  num('length_in_hours', 'Length of the primary booking, hours.'),
  num('length_in_days', 'Length of the primary booking, days.'),
  text('indoor_outdoor', 'Indoor or Outdoor.'),
  at('starts_at', 'Start of the primary booking.'),
  at('ends_at', 'End of the primary booking.'),
  at('setup_at', 'Setup time.'),
  at('pickup_at', 'Pickup time.'),
  at('dropoff_at', 'Drop-off time.'),
  text('title', 'Title.'),
  int('brand_id', 'Brand (business) id.'),
  text('brand_name', 'Brand name.'),
  at('created_at', 'When the lead was created.'),
  bool('spam', 'Marked as spam.'),
  bool('archived', 'Archived.'),
  bool('converted_to_event', 'Converted to an event.'),
  int('event_type_id', 'Package of the primary booking.'),
  ...utm,
  ...packageNames,
  json('custom_fields', 'Custom fields as the service lists them.'),
  ...referral,
];

const leadBookings: ColumnSpec[] = [
  fk('lead_id', 'The lead (leads.id).'),
  int('event_type_id', 'Package id.'),
  at('starts_at', 'Start.'),
  at('ends_at', 'End.'),
  int('staff_id', 'Assigned staff member.'),
  text('staff_name', 'Assigned staff member name.'),
  text('name', 'Package name.'),
  text('service_name', 'Service name.'),
  text('package_group_name', 'Package group name.'),
  text('title', 'Title.'),
  text('brand_name', 'Brand name.'),
  text('date_mode', 'Date mode (e.g. date_time).'),
  num('length_in_minutes', 'Length, minutes.'),
  num('length_in_days', 'Length, days.'),
  num('units', 'Units booked.'),
  int('package_unit_range_id', 'Package unit range.'),
  json('event_type_unit_range', 'Unit range of the package.'),
  text('preview_image', 'Preview image path.'),
];

const events: ColumnSpec[] = [
  text('title', 'Title.'),
  text('status', 'Status (proposal, confirmed, canceled, completed, ... kept as sent).'),
  at('booked_at', 'When it was booked (NULL for a proposal).'),
  at('created_at', 'When the event was created.'),
  text('created_via', 'How it was created.'),
  ...venue,
  text('public_notes', 'Notes shown to the customer.'),
  text('private_notes', 'Internal notes.'),
  text('coupon_code', 'Coupon code.'),
  text('photo_album_url', 'Photo album link.'),
  text('photo_album_instructions', 'Photo album instructions.'),
  text('video_url', 'Video link.'),
  text('video_album_instructions', 'Video album instructions.'),
  bool('completed', 'Completed.'),
  bool('canceled', 'Canceled.'),
  bool('postponed', 'Postponed.'),
  text('invoice_number', 'Invoice number.'),
  num('billable_distance', 'Billable distance.'),
  num('total_distance', 'Total distance.'),
  text('distance_unit', 'Unit of the distances.'),
  num('latitude', 'Venue latitude.'),
  num('longitude', 'Venue longitude.'),
  num('tax_rate', 'Tax rate, percent.'),
  text('source', 'Source.'),
  int('estimated_number_guests', 'Estimated number of guests.'),
  text('indoor_outdoor', 'Indoor or Outdoor.'),
  text('lead_event_type', 'Kind of event.'),
  text('contact_preference', 'Preferred contact channel.'),
  text('po_number', 'Purchase order number.'),
  json('stair_setup', 'Stair setup.'),
  ...utm,
  at('starts_at', 'Start.'),
  at('ends_at', 'End.'),
  num('length_in_minutes', 'Length, minutes.'),
  num('length_in_hours', 'Length, hours.'),
  ...money('starting_balance', 'Starting balance'),
  ...money('deposit_amount_due', 'Deposit due'),
  ...money('custom_deposit_amount', 'Custom deposit'),
  ...money('balance_amount_due', 'Balance due'),
  {
    name: 'starts_at_date',
    type: 'date',
    from: 'starts_at_date_iso8601',
    description: 'Start day in the business time zone.',
  },
  text('starts_at_time', 'Start time, 12-hour, in the business time zone.'),
  {
    name: 'invoice_date',
    type: 'date',
    from: 'invoice_date_iso8601',
    description: 'Invoice day.',
  },
  { name: 'proposal_valid_through', type: 'date', description: 'Last day the proposal is valid.' },
  ...packageNames,
  text('add_on_names', 'Add-on names, comma-separated as the service sends them.'),
  text('backdrop_names', 'Backdrop names.'),
  json('design_statuses', 'Design statuses.'),
  at('due_at', 'When the balance is due.'),
  text('customer_ids', 'Customer ids, as the service lists them.'),
  text('customer_names', 'Customer names.'),
  text('customer_emails', 'Customer e-mails.'),
  text('customer_phones', 'Customer phones.'),
  text('customer_and_contact_ids', 'Customer and contact ids.'),
  text('customer_and_contact_names', 'Customer and contact names.'),
  text('customer_and_contact_emails', 'Customer and contact e-mails.'),
  text('customer_and_contact_phones', 'Customer and contact phones.'),
  text('additional_contact_ids', 'Additional contact ids.'),
  text('additional_contact_names', 'Additional contact names.'),
  text('additional_contact_emails', 'Additional contact e-mails.'),
  text('additional_contact_phones', 'Additional contact phones.'),
  text('assigned_staff_ids', 'Assigned staff ids.'),
  text('assigned_staff_names', 'Assigned staff names.'),
  text('assigned_staff_abbreviations', 'Assigned staff abbreviations.'),
  text('assigned_staff_emails', 'Assigned staff e-mails.'),
  int('brand_id', 'Brand (business) id.'),
  text('brand_name', 'Brand name.'),
  ...referral,
];

const eventBookings: ColumnSpec[] = [
  fk('event_id', 'The event (events.id).'),
  int('event_type_id', 'Package id.'),
  text('title', 'Title.'),
  text('name', 'Package name.'),
  at('starts_at', 'Start.'),
  at('ends_at', 'End.'),
  text('status', "The event's status."),
  text('brand_name', 'Brand name.'),
  bool('canceled', 'Canceled.'),
  bool('postponed', 'Postponed.'),
  text('date_mode', 'Date mode (e.g. date_time).'),
  bool('override_ends_at', 'End time set by hand.'),
  num('length_in_minutes', 'Length, minutes.'),
  num('length_in_days', 'Length, days.'),
  json('event_type_unit_range', 'Unit range of the package.'),
  num('units', 'Units booked.'),
  json('staff_member_abbreviations', 'Staff member abbreviations.'),
  bool('expired_proposal', 'The proposal has expired.'),
  text('package_group_name', 'Package group name.'),
  text('service_name', 'Service name.'),
  ...money('override_price', 'Price set by hand'),
  bool('taxable', 'Taxable.'),
];

const appointments: ColumnSpec[] = [
  text('title', 'Title.'),
  text('custom_title', 'Title set by hand.'),
  text('guest_name', 'Guest name.'),
  { ...text('guest_email', 'Guest e-mail.'), indexed: true },
  text('guest_phone', 'Guest phone.'),
  json('additional_guests', 'Additional guests.'),
  at('starts_at', 'Start.'),
  at('ends_at', 'End.'),
  { name: 'starts_at_date', type: 'date', description: 'Start day in the business time zone.' },
  text('starts_at_time', 'Start time, 12-hour.'),
  num('length_in_minutes', 'Length, minutes.'),
  text('location', 'Location.'),
  text('location_details', 'Location details (address or meeting link).'),
  text('private_notes', 'Internal notes.'),
  text('message', 'Message from the guest.'),
  int('user_id', 'Assigned staff user.'),
  int('brand_id', 'Brand (business) id.'),
  int('user_appointment_calendar_id', 'Calendar it was booked on.'),
  text('created_via', 'How it was created (quick_add, widget, app, ...).'),
  bool('canceled', 'Canceled.'),
];

export const TABLES: Readonly<Record<Resource, TableSpec>> = {
  leads: { resource: 'leads', table: 'leads', columns: leads },
  lead_bookings: { resource: 'lead_bookings', table: 'lead_bookings', columns: leadBookings },
  events: { resource: 'events', table: 'events', columns: events },
  event_bookings: { resource: 'event_bookings', table: 'event_bookings', columns: eventBookings },
  appointments: { resource: 'appointments', table: 'appointments', columns: appointments },
};

/** Every table, in the order the docs list them. */
export const ALL_TABLES: readonly TableSpec[] = RESOURCES.map((resource) => TABLES[resource]);
