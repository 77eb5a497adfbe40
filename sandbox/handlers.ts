import type { Handlers } from './context.js';
import { offeringsHandlers } from './resources/offerings.js';
import { leadsHandlers } from './resources/leads-routes.js';
import { addOnsHandlers } from './resources/add-ons.js';
import { eventsHandlers } from './resources/events-routes.js';
import { eventNotesHandlers } from './resources/event-notes.js';
import { availabilityHandlers } from './resources/availability.js';
import { appointmentsHandlers } from './resources/appointments-routes.js';
import { expensesHandlers } from './resources/expenses.js';
import { questionnairesHandlers } from './resources/questionnaires.js';
import { designTemplatesHandlers } from './resources/design-templates.js';

/** Every resource module's handlers, by route id. A test checks that no route is left out. */
export function allHandlers(): Handlers {
  return {
    ...offeringsHandlers(),
    ...leadsHandlers(),
    ...addOnsHandlers(),
    ...eventsHandlers(),
    ...eventNotesHandlers(),
    ...availabilityHandlers(),
    ...appointmentsHandlers(),
    ...expensesHandlers(),
    ...questionnairesHandlers(),
    ...designTemplatesHandlers(),
  };
}
