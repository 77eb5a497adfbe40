/** The public surface of the typed client of the Event Business Service. */
export { createClient, type Client, type ClientOptions } from './client.js';
export {
  Transport,
  ClientConfigError,
  type TransportOptions,
  type CallOptions,
  type Query,
} from './transport.js';
export * from './errors.js';
export * from './values.js';
export * from './paging.js';
export * from './auth.js';
export * from './oauth.js';
export * from './routes.js';
export * from './schemas/questionnaire-answers.js';

export * from './schemas/envelope.js';
export * from './schemas/formats.js';
export * from './schemas/leads.js';
export * from './schemas/lead-bookings.js';
export * from './schemas/events.js';
export * from './schemas/appointments.js';
export * from './schemas/availability.js';
export * from './schemas/expenses.js';
export * from './schemas/questionnaires.js';
export * from './schemas/offerings.js';
export * from './schemas/add-ons.js';
export * from './schemas/design-templates.js';
export type { UpdateAnswersOptions } from './resources/questionnaires.js';
