import { Transport, type TransportOptions } from './transport.js';
import { leadsResource } from './resources/leads.js';

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
  };
}

export type Client = ReturnType<typeof createClient>;
