import { Transport, type TransportOptions } from './transport.js';
import { addOnCategoriesResource, addOnsResource } from './resources/add-ons.js';
import { appointmentsResource } from './resources/appointments.js';
import { availabilityResource } from './resources/availability.js';
import {
  designTemplatesResource,
  templateSelectionsResource,
} from './resources/design-templates.js';
import { eventBookingsResource, eventNotesResource, eventsResource } from './resources/events.js';
import { expensesResource } from './resources/expenses.js';
import { leadBookingsResource } from './resources/lead-bookings.js';
import { leadsResource } from './resources/leads.js';
import { offeringsResource } from './resources/offerings.js';
import { questionnairesResource, suggestionListsResource } from './resources/questionnaires.js';

export type ClientOptions = TransportOptions;

/**
 * A typed client of the whole service: one namespace per part of the spec, every operation of
 * the shared route table. No hidden retries: a failed call throws a typed error saying whether
 * it is retryable, and Temporal (or the caller) decides.
 */
export function createClient(options: ClientOptions) {
  const transport = new Transport(options);
  return {
    transport,
    leads: leadsResource(transport),
    leadBookings: leadBookingsResource(transport),
    events: eventsResource(transport),
    eventBookings: eventBookingsResource(transport),
    eventNotes: eventNotesResource(transport),
    appointments: appointmentsResource(transport),
    availability: availabilityResource(transport),
    expenses: expensesResource(transport),
    /** Questionnaires; `questionnaires.templates` holds the templates. */
    questionnaires: questionnairesResource(transport),
    suggestionLists: suggestionListsResource(transport),
    /** services, packageGroups, packages */
    offerings: offeringsResource(transport),
    addOns: addOnsResource(transport),
    addOnCategories: addOnCategoriesResource(transport),
    designTemplates: designTemplatesResource(transport),
    templateSelections: templateSelectionsResource(transport),
  };
}

export type Client = ReturnType<typeof createClient>;
