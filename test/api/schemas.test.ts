import { describe, expect, it } from 'vitest';
import {
  addOnSchema,
  appointmentSchema,
  createAppointmentBodySchema,
  createEventBodySchema,
  createExpenseBodySchema,
  createLeadBodySchema,
  detailedAvailabilitySchema,
  eventBookingSchema,
  eventSchema,
  leadBookingBodySchema,
  leadSchema,
  listSchema,
  quickEventBookings,
  singleSchema,
  templateSelectionBodySchema,
  updateExpenseBodySchema,
} from '../../api/index.js';
import type { z } from 'zod';

function issuesOf(schema: z.ZodType, value: unknown): Record<string, string[]> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return {};
  const out: Record<string, string[]> = {};
  for (const issue of parsed.error.issues)
    (out[issue.path.map(String).join('.') || '(root)'] ??= []).push(issue.message);
  return out;
}

describe('tolerant reader', () => {
  it('keeps unknown fields at every level and unknown enum values as strings', () => {
    const body = {
      meta: { status: 'ok', request_id: 'r-1' },
      data: {
        id: '7',
        type: 'event',
        attributes: {
          id: 7,
          status: 'waitlisted',
          created_via: 'carrier_pigeon',
          brand_new_field: { nested: true },
        },
        relationships: { event_bookings: { data: [{ id: '3', type: 'event_booking' }] } },
        links: { self: '/api/v1/events/7' },
      },
      included: [{ id: '3', type: 'event_booking', attributes: { id: 3, shiny: 1 } }],
      jsonapi: { version: '1.0' },
    };
    const parsed = singleSchema(eventSchema).parse(body);
    expect(parsed.data.attributes.status).toBe('waitlisted');
    expect(parsed.data.attributes.brand_new_field).toEqual({ nested: true });
    expect(parsed.data.links).toEqual({ self: '/api/v1/events/7' });
    expect(parsed.meta.request_id).toBe('r-1');
    expect(parsed.jsonapi).toEqual({ version: '1.0' });
    expect(parsed.included?.[0]?.attributes).toEqual({ id: 3, shiny: 1 });
  });

  it('accepts null pricing (no pricing permission) on events, event bookings and add-ons', () => {
    const nullMoney = (name: string) => ({
      [name]: null,
      [`${name}_cents`]: null,
      [`${name}_currency`]: null,
      [`${name}_formatted`]: null,
    });
    const event = eventSchema.parse({
      id: '1',
      type: 'event',
      attributes: {
        id: 1,
        ...nullMoney('starting_balance'),
        ...nullMoney('deposit_amount_due'),
        ...nullMoney('custom_deposit_amount'),
        ...nullMoney('balance_amount_due'),
      },
    });
    expect(event.attributes.balance_amount_due_cents).toBeNull();
    expect(
      eventBookingSchema.safeParse({
        id: '2',
        type: 'event_booking',
        attributes: { id: 2, ...nullMoney('override_price') },
      }).success,
    ).toBe(true);
    expect(
      addOnSchema.safeParse({
        id: '3',
        type: 'add_on',
        attributes: {
          id: 3,
          price_method: 'per_guest',
          ...nullMoney('price'),
          ...nullMoney('hourly_price'),
        },
      }).success,
    ).toBe(true);
  });

  it('accepts nullable lead fields and lists without optional meta', () => {
    const list = listSchema(leadSchema).parse({
      meta: { status: 'ok', total_count: 1, per_page: 25 },
      data: [
        {
          id: '5',
          type: 'lead',
          attributes: { id: 5, email: null, phone: null, starts_at: null, origin: 'Smoke Signal' },
        },
      ],
    });
    expect(list.data[0]?.attributes.origin).toBe('Smoke Signal');
  });

  it('still refuses what breaks the envelope: a numeric data.id, a missing attributes.id', () => {
    expect(leadSchema.safeParse({ id: 5, type: 'lead', attributes: { id: 5 } }).success).toBe(
      false,
    );
    expect(leadSchema.safeParse({ id: '5', type: 'lead', attributes: {} }).success).toBe(false);
  });

  it('reads detailed availability bare or wrapped in data', () => {
    const bare = { available: true, messages: [], overlapping_bookings: [] };
    expect(detailedAvailabilitySchema.parse(bare).available).toBe(true);
    expect(
      detailedAvailabilitySchema.parse({
        meta: { status: 'ok' },
        data: { ...bare, available: false },
      }).available,
    ).toBe(false);
  });

  it('keeps string ids of built-in booking questions and additional appointment fields', () => {
    const appointment = appointmentSchema.parse({
      id: '4',
      type: 'appointment',
      attributes: { id: 4, created_via: 'kiosk', meeting_url: 'https://meet.example/x' },
    });
    expect(appointment.attributes.meeting_url).toBe('https://meet.example/x');
  });
});

describe('strict writer', () => {
  it('names the bad field and refuses unknown ones', () => {
    expect(Object.keys(issuesOf(createLeadBodySchema, { email: 'nope' }))).toEqual(['email']);
    expect(Object.keys(issuesOf(createLeadBodySchema, { first_name: 'No email' }))).toEqual([
      'email',
    ]);
    expect(issuesOf(createLeadBodySchema, { email: 'a@b.co', mystery: 1 })['(root)']?.[0]).toMatch(
      /mystery/,
    );
    expect(
      Object.keys(
        issuesOf(createLeadBodySchema, { email: 'a@b.co', contact_preference: 'Pigeon' }),
      ),
    ).toEqual(['contact_preference']);
    expect(
      Object.keys(issuesOf(createLeadBodySchema, { email: 'a@b.co', event_date: '07-04-2031' })),
    ).toEqual(['event_date']);
  });

  it('event creation: contact_type enum, MM-DD-YYYY dates, 12-hour times, confirmed-only options', () => {
    const base = { contact_type: 'New Customer' as const };
    expect(createEventBodySchema.safeParse(base).success).toBe(true);
    expect(Object.keys(issuesOf(createEventBodySchema, {}))).toEqual(['contact_type']);
    expect(Object.keys(issuesOf(createEventBodySchema, { contact_type: 'new customer' }))).toEqual([
      'contact_type',
    ]);
    const entries = quickEventBookings([
      { event_type_id: 3, starts_at_date: '2031-06-20', starts_at_time: '17:00' },
    ]);
    expect(
      Object.keys(
        issuesOf(createEventBodySchema, { ...base, quick_event_bookings_attributes: entries }),
      ).sort(),
    ).toEqual([
      'quick_event_bookings_attributes.0.starts_at_date',
      'quick_event_bookings_attributes.0.starts_at_time',
    ]);
    expect(
      createEventBodySchema.safeParse({
        ...base,
        quick_event_bookings_attributes: quickEventBookings([
          {
            event_type_id: 3,
            starts_at_date: '06-20-2031',
            starts_at_time: '5:00 PM',
            ends_at_time: '',
          },
        ]),
      }).success,
    ).toBe(true);
    expect(
      Object.keys(
        issuesOf(createEventBodySchema, { ...base, is_proposal: true, signature_collected: true }),
      ),
    ).toEqual(['signature_collected']);
    expect(
      Object.keys(
        issuesOf(createEventBodySchema, {
          contact_type: 'None',
          send_contact_invitation_to_create_account: true,
        }),
      ),
    ).toEqual(['send_contact_invitation_to_create_account']);
    expect(
      Object.keys(issuesOf(createEventBodySchema, { contact_type: 'Existing Customer' })),
    ).toEqual(['customer_user_id']);
  });

  it('appointments: created_via enum, YYYY-MM-DD, required fields', () => {
    const ok = {
      guest_name: 'G',
      guest_email: 'g@example.com',
      starts_at_date: '2031-05-14',
      starts_at_time: '2:00 PM',
      length_in_minutes: 30,
      created_via: 'widget',
    };
    expect(createAppointmentBodySchema.safeParse(ok).success).toBe(true);
    expect(
      Object.keys(issuesOf(createAppointmentBodySchema, { ...ok, created_via: 'email' })),
    ).toEqual(['created_via']);
    expect(
      Object.keys(issuesOf(createAppointmentBodySchema, { ...ok, length_in_minutes: 30.5 })),
    ).toEqual(['length_in_minutes']);
    expect(Object.keys(issuesOf(createAppointmentBodySchema, {})).sort()).toEqual(
      [
        'created_via',
        'guest_email',
        'guest_name',
        'length_in_minutes',
        'starts_at_date',
        'starts_at_time',
      ].sort(),
    );
  });

  it('expenses: the payee the type names is required', () => {
    const base = { payment_date: '2031-01-02', amount: 10, ref_no: 'R1' };
    expect(
      createExpenseBodySchema.safeParse({ ...base, payee_type: 'custom', payee_value: 'Shop' })
        .success,
    ).toBe(true);
    expect(
      createExpenseBodySchema.safeParse({ ...base, payee_type: 'staff', staff_id: 4 }).success,
    ).toBe(true);
    expect(
      Object.keys(issuesOf(createExpenseBodySchema, { ...base, payee_type: 'custom' })),
    ).toEqual(['payee_value']);
    expect(
      Object.keys(issuesOf(createExpenseBodySchema, { ...base, payee_type: 'staff' })),
    ).toEqual(['staff_id']);
    expect(
      Object.keys(issuesOf(createExpenseBodySchema, { ...base, payee_type: 'vendor' })),
    ).toEqual(['payee_type']);
    expect(
      Object.keys(
        issuesOf(createExpenseBodySchema, {
          ...base,
          payee_type: 'custom',
          payee_value: 'S',
          amount: '10',
        }),
      ),
    ).toEqual(['amount']);
    expect(updateExpenseBodySchema.safeParse({ description: 'only this' }).success).toBe(true);
    expect(Object.keys(issuesOf(updateExpenseBodySchema, { payee_type: 'staff' }))).toEqual([
      'staff_id',
    ]);
  });

  it('lead bookings: staff_id may be an empty string (clears it) but not another string', () => {
    expect(leadBookingBodySchema.safeParse({ staff_id: '' }).success).toBe(true);
    expect(Object.keys(issuesOf(leadBookingBodySchema, { staff_id: '12' }))).toEqual(['staff_id']);
    expect(Object.keys(issuesOf(leadBookingBodySchema, { starts_at_time: '2pm' }))).toEqual([
      'starts_at_time',
    ]);
  });

  it('template selections: the required fields are named under template_selection', () => {
    expect(
      Object.keys(issuesOf(templateSelectionBodySchema, { template_selection: {} })).sort(),
    ).toEqual(
      [
        'template_selection.design_id',
        'template_selection.event_booking_id',
        'template_selection.template_image_url',
        'template_selection.template_name',
        'template_selection.user_id',
      ].sort(),
    );
  });
});
