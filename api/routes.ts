/**
 * The one route table shared by the client and the sandbox. `source: 'given'` rows carry the
 * method and path the spec states; `assumed` rows are operations the spec names without a
 * method or path (or without a permission), filled in by us. Assumed paths can be overridden
 * in configuration without a code change (see `withRouteOverrides`).
 */
import { parseRouteOverride } from '../config/route-override.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDef {
  readonly id: string;
  readonly method: HttpMethod;
  /** Full path with the /api/v1 prefix; `{name}` marks a path parameter. */
  readonly path: string;
  /** Whether the spec gives the method and path, or we assume them. */
  readonly source: 'given' | 'assumed';
  /**
   * Any one of these permissions admits the call; `null`: any authenticated caller.
   * `permissionSource` says whether the spec names them or we assume them.
   */
  readonly permissions: readonly string[] | null;
  readonly permissionSource: 'given' | 'assumed';
  /** Installed apps only (OAuth bearer or legacy app credentials without a business key). */
  readonly appsOnly?: boolean;
  readonly summary: string;
}

const EVENT_READ = ['assigned_event_read', 'unassigned_event_read'] as const;
const EVENT_WRITE = ['assigned_event_write', 'unassigned_event_write'] as const;
const APPT_READ = ['assigned_appointment_read', 'unassigned_appointment_read'] as const;
const APPT_WRITE = ['assigned_appointment_write', 'unassigned_appointment_write'] as const;

function route(
  id: string,
  method: HttpMethod,
  path: string,
  source: 'given' | 'assumed',
  permissions: readonly string[] | null,
  permissionSource: 'given' | 'assumed',
  summary: string,
  extra: { appsOnly?: boolean } = {},
): RouteDef {
  return { id, method, path, source, permissions, permissionSource, summary, ...extra };
}

export const ROUTES = [
  // Add-ons
  route(
    'addOnCategories.list',
    'GET',
    '/api/v1/add_on_categories',
    'given',
    ['offerings_read'],
    'given',
    'List add-on categories (active, by position)',
  ),
  route(
    'addOnCategories.create',
    'POST',
    '/api/v1/add_on_categories',
    'given',
    ['offerings_write'],
    'given',
    'Create an add-on category',
  ),
  route(
    'addOnCategories.get',
    'GET',
    '/api/v1/add_on_categories/{id}',
    'given',
    ['offerings_read'],
    'given',
    'Fetch an add-on category',
  ),
  route(
    'addOnCategories.update',
    'PUT',
    '/api/v1/add_on_categories/{id}',
    'given',
    ['offerings_write'],
    'given',
    'Rename an add-on category',
  ),
  route(
    'addOnCategories.delete',
    'DELETE',
    '/api/v1/add_on_categories/{id}',
    'given',
    ['offerings_write'],
    'given',
    'Delete a category and its add-ons',
  ),
  route(
    'addOns.list',
    'GET',
    '/api/v1/add_ons',
    'given',
    ['offerings_read'],
    'given',
    'List add-ons (active)',
  ),
  route(
    'addOns.create',
    'POST',
    '/api/v1/add_ons',
    'given',
    ['offerings_write'],
    'given',
    'Create an add-on',
  ),

  // Offerings: services > package groups > packages
  route(
    'offerings.services',
    'GET',
    '/api/v1/services',
    'assumed',
    ['offerings_read'],
    'assumed',
    'List services',
  ),
  route(
    'offerings.packageGroups',
    'GET',
    '/api/v1/package_groups',
    'assumed',
    ['offerings_read'],
    'assumed',
    'List package groups',
  ),
  route(
    'offerings.packages',
    'GET',
    '/api/v1/packages',
    'assumed',
    ['offerings_read'],
    'assumed',
    'List packages',
  ),

  // Leads
  route(
    'leads.create',
    'POST',
    '/api/v1/leads',
    'given',
    ['lead_create'],
    'given',
    'Create a lead',
  ),
  route(
    'leads.list',
    'GET',
    '/api/v1/leads',
    'given',
    ['lead_read'],
    'given',
    'List and search leads',
  ),
  route(
    'leads.get',
    'GET',
    '/api/v1/leads/{lead_id}',
    'given',
    ['lead_read'],
    'given',
    'Fetch a lead',
  ),
  route(
    'leads.bookingQuestions',
    'GET',
    '/api/v1/leads/{lead_id}/booking_questions',
    'given',
    ['lead_read'],
    'given',
    "A lead's booking questions",
  ),
  route(
    'leads.updateBookingQuestions',
    'PATCH',
    '/api/v1/leads/{lead_id}/booking_questions',
    'given',
    ['lead_write'],
    'given',
    'Answer booking questions (only keys sent)',
  ),

  // Lead bookings
  route(
    'leadBookings.list',
    'GET',
    '/api/v1/lead_bookings',
    'assumed',
    ['lead_read'],
    'given',
    'List lead bookings',
  ),
  route(
    'leadBookings.get',
    'GET',
    '/api/v1/lead_bookings/{lead_booking_id}',
    'assumed',
    ['lead_read'],
    'given',
    'Fetch a lead booking',
  ),
  route(
    'leadBookings.update',
    'PATCH',
    '/api/v1/lead_bookings/{lead_booking_id}',
    'assumed',
    ['lead_write'],
    'given',
    'Update a lead booking (only fields sent)',
  ),
  route(
    'leadBookings.remove',
    'DELETE',
    '/api/v1/lead_bookings/{lead_booking_id}',
    'assumed',
    ['lead_write'],
    'given',
    'Remove a lead booking',
  ),
  route(
    'leadBookings.addToLead',
    'POST',
    '/api/v1/leads/{lead_id}/lead_bookings',
    'assumed',
    ['lead_write'],
    'given',
    'Add a booking to a lead',
  ),
  route(
    'leadBookings.addAddOn',
    'POST',
    '/api/v1/lead_bookings/{lead_booking_id}/lead_add_ons',
    'assumed',
    ['lead_write'],
    'given',
    'Add an add-on to a lead booking',
  ),
  route(
    'leadBookings.setBackdrop',
    'PUT',
    '/api/v1/lead_bookings/{lead_booking_id}/photobooth_background',
    'assumed',
    ['lead_write'],
    'given',
    'Set the backdrop of a lead booking',
  ),
  route(
    'leadBookings.removeBackdrop',
    'DELETE',
    '/api/v1/lead_bookings/{lead_booking_id}/photobooth_background',
    'assumed',
    ['lead_write'],
    'given',
    'Remove the backdrop of a lead booking',
  ),

  // Events and event bookings
  route(
    'events.get',
    'GET',
    '/api/v1/events/{event_id}',
    'given',
    EVENT_READ,
    'assumed',
    'Fetch an event',
  ),
  route(
    'events.create',
    'POST',
    '/api/v1/events',
    'given',
    EVENT_WRITE,
    'assumed',
    'Create an event (proposal or booking), optionally from a lead',
  ),
  route(
    'eventBookings.get',
    'GET',
    '/api/v1/event_bookings/{event_booking_id}',
    'given',
    EVENT_READ,
    'assumed',
    'Fetch an event booking',
  ),
  route(
    'eventBookings.list',
    'GET',
    '/api/v1/event_bookings',
    'given',
    EVENT_READ,
    'assumed',
    'List event bookings in a date window',
  ),
  route(
    'eventNotes.delete',
    'DELETE',
    '/api/v1/events/{event_id}/notes/{id}',
    'assumed',
    EVENT_READ,
    'given',
    'Delete a note (author only)',
  ),

  // Appointments
  route(
    'appointments.bookingQuestions',
    'GET',
    '/api/v1/appointments/{appointment_id}/booking_questions',
    'given',
    APPT_READ,
    'given',
    "An appointment's booking questions",
  ),
  route(
    'appointments.updateBookingQuestions',
    'PATCH',
    '/api/v1/appointments/{appointment_id}/booking_questions',
    'given',
    APPT_WRITE,
    'given',
    'Answer appointment booking questions',
  ),
  route(
    'appointments.list',
    'GET',
    '/api/v1/appointments',
    'assumed',
    APPT_READ,
    'given',
    'List appointments',
  ),
  route(
    'appointments.create',
    'POST',
    '/api/v1/appointments',
    'assumed',
    ['appointment_create'],
    'given',
    'Create an appointment',
  ),
  route(
    'appointments.get',
    'GET',
    '/api/v1/appointments/{id}',
    'assumed',
    APPT_READ,
    'given',
    'Fetch an appointment',
  ),
  route(
    'appointments.update',
    'PATCH',
    '/api/v1/appointments/{id}',
    'given',
    APPT_WRITE,
    'given',
    'Update an appointment (only fields sent)',
  ),
  route(
    'appointments.delete',
    'DELETE',
    '/api/v1/appointments/{id}',
    'assumed',
    APPT_WRITE,
    'given',
    'Soft-delete an appointment',
  ),
  route(
    'appointments.cancel',
    'POST',
    '/api/v1/appointments/{id}/cancel',
    'assumed',
    APPT_WRITE,
    'given',
    'Cancel an appointment',
  ),
  route(
    'appointments.uncancel',
    'POST',
    '/api/v1/appointments/{id}/uncancel',
    'assumed',
    APPT_WRITE,
    'given',
    'Restore a canceled appointment',
  ),
  route(
    'appointments.duplicate',
    'POST',
    '/api/v1/appointments/{id}/duplicate',
    'assumed',
    ['unassigned_appointment_write'],
    'given',
    'Copy an appointment to a new date and time',
  ),

  // Availability
  route(
    'availability.check',
    'GET',
    '/api/v1/availability',
    'assumed',
    ['availability_read'],
    'given',
    'Availability for a date',
  ),
  route(
    'availability.detailed',
    'GET',
    '/api/v1/availability/detailed',
    'assumed',
    ['availability_read'],
    'given',
    'Detailed availability',
  ),
  route(
    'availability.timeSlots',
    'GET',
    '/api/v1/availability/time_slots',
    'assumed',
    ['availability_read'],
    'given',
    'Available time slots of a package',
  ),
  route(
    'availability.appointmentSlots',
    'GET',
    '/api/v1/availability/appointment_slots',
    'assumed',
    ['user_appointment_calendar_read'],
    'given',
    'Appointment slots of a calendar',
  ),

  // Expenses
  route(
    'expenses.create',
    'POST',
    '/api/v1/expenses',
    'assumed',
    ['expense_create'],
    'given',
    'Create an expense',
  ),
  route(
    'expenses.get',
    'GET',
    '/api/v1/expenses/{id}',
    'assumed',
    ['expense_read'],
    'given',
    'Fetch an expense',
  ),
  route(
    'expenses.update',
    'PATCH',
    '/api/v1/expenses/{id}',
    'assumed',
    ['expense_write'],
    'given',
    'Update an expense (only fields sent)',
  ),
  route(
    'expenses.delete',
    'DELETE',
    '/api/v1/expenses/{id}',
    'assumed',
    ['expense_write'],
    'given',
    'Soft-delete an expense',
  ),

  // Questionnaires, templates, suggestion lists
  route(
    'questionnaireTemplates.list',
    'GET',
    '/api/v1/questionnaire_templates',
    'given',
    ['planning_read'],
    'given',
    'List questionnaire templates',
  ),
  route(
    'questionnaireTemplates.get',
    'GET',
    '/api/v1/questionnaire_templates/{id}',
    'given',
    ['planning_read'],
    'given',
    'Fetch a questionnaire template',
  ),
  route(
    'questionnaires.list',
    'GET',
    '/api/v1/questionnaires',
    'assumed',
    EVENT_READ,
    'given',
    "A booking's questionnaires (query event_id)",
  ),
  route(
    'questionnaires.get',
    'GET',
    '/api/v1/questionnaires/{id}',
    'assumed',
    EVENT_READ,
    'assumed',
    'Fetch a questionnaire',
  ),
  route(
    'questionnaires.attachTemplate',
    'POST',
    '/api/v1/questionnaires',
    'assumed',
    EVENT_WRITE,
    'given',
    'Attach a questionnaire from a template',
  ),
  route(
    'questionnaires.createExternal',
    'POST',
    '/api/v1/questionnaires/create_external',
    'given',
    EVENT_WRITE,
    'given',
    'Attach an external questionnaire',
  ),
  route(
    'questionnaires.updateAnswers',
    'PATCH',
    '/api/v1/questionnaires/{id}/answers',
    'assumed',
    EVENT_WRITE,
    'assumed',
    'Update answers (values by field uuid)',
  ),
  route(
    'suggestionLists.list',
    'GET',
    '/api/v1/suggestion_lists',
    'given',
    ['planning_read'],
    'assumed',
    'List suggestion lists',
  ),
  route(
    'suggestionLists.get',
    'GET',
    '/api/v1/suggestion_lists/{id}',
    'given',
    ['planning_read'],
    'assumed',
    'Fetch a suggestion list and its songs',
  ),

  // Design templates and template selections (installed apps). The spec names no permission
  // for them; writes are not open to every app token: a template is part of what the business
  // offers (offerings_write), a selection is written onto an event booking (event write).
  route(
    'designTemplates.list',
    'GET',
    '/api/v1/design_templates',
    'given',
    null,
    'assumed',
    'List design templates',
  ),
  route(
    'designTemplates.create',
    'POST',
    '/api/v1/design_templates',
    'given',
    ['offerings_write'],
    'assumed',
    'Create a design template',
    { appsOnly: true },
  ),
  route(
    'designTemplates.update',
    'PUT',
    '/api/v1/design_templates/{id}',
    'given',
    ['offerings_write'],
    'assumed',
    'Update a design template',
    { appsOnly: true },
  ),
  route(
    'designTemplates.categories',
    'GET',
    '/api/v1/design_template_categories',
    'given',
    null,
    'assumed',
    'List design template categories',
  ),
  route(
    'designTemplates.layouts',
    'GET',
    '/api/v1/design_category_layouts',
    'given',
    null,
    'assumed',
    'List layouts of a category',
  ),
  route(
    'templateSelections.create',
    'POST',
    '/api/v1/template_selections',
    'given',
    EVENT_WRITE,
    'assumed',
    "Record a customer's template choice",
    { appsOnly: true },
  ),
] as const satisfies readonly RouteDef[];

export type RouteId = (typeof ROUTES)[number]['id'];

const BY_ID = new Map<string, RouteDef>(ROUTES.map((r) => [r.id, r]));

export function routeById(id: RouteId): RouteDef {
  const found = BY_ID.get(id);
  if (!found) throw new Error(`unknown route ${id}`);
  return found;
}

/** OAuth endpoints live on the authorization server ({auth_url}), not under /api/v1. */
export const OAUTH_PATHS = {
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  revoke: '/oauth/revoke',
} as const;

/** The `{name}` placeholders of a path, sorted. */
const placeholdersOf = (path: string): string[] =>
  [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '').sort();

/**
 * The route table with overrides of assumed routes, as
 * `{ "leadBookings.update": "PUT /api/v1/lead_bookings/{lead_booking_id}" }`. The shape of each
 * (method, and a path of plain segments under /api/v1/) is config's rule; the table's are
 * these: the route exists, the spec does not fix it (given routes cannot be overridden), and
 * its path keeps the placeholders the calls fill.
 */
export function withRouteOverrides(
  overrides: Readonly<Record<string, string>>,
): ReadonlyMap<string, RouteDef> {
  const table = new Map<string, RouteDef>(BY_ID);
  for (const [id, spec] of Object.entries(overrides)) {
    const base = table.get(id);
    if (!base) throw new Error(`route override names an unknown route '${id}'`);
    if (base.source === 'given') {
      throw new Error(`route '${id}' is given by the spec and cannot be overridden`);
    }
    const route = parseRouteOverride(id, spec);
    if ('problem' in route) throw new Error(route.problem);
    const wanted = placeholdersOf(base.path);
    if (placeholdersOf(route.path).join() !== wanted.join()) {
      const names = wanted.map((name) => `{${name}}`).join(' ') || 'none';
      throw new Error(
        `route override for '${id}' must keep the placeholders of ${base.path} (${names}), got '${route.path}'`,
      );
    }
    table.set(id, { ...base, method: route.method, path: route.path });
  }
  return table;
}

/** Fills `{name}` placeholders; each value is URI-encoded. */
export function fillPath(path: string, params: Readonly<Record<string, string | number>>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}
