import type { Client } from '../../api/client.js';
import { NotFoundError, RateLimitedError } from '../../api/errors.js';
import { singleSchema } from '../../api/schemas/envelope.js';
import { leadSchema } from '../../api/schemas/leads.js';
import { z } from 'zod';
import {
  canonicalRecord,
  type CanonicalRecord,
  type Resource,
  type SourceItem,
} from './canonical.js';

export interface RecordRead {
  record: CanonicalRecord;
  /** Sideloaded records: a lead's bookings. */
  included: CanonicalRecord[];
}

const leadWithBookings = singleSchema(leadSchema);
const leadGetQuery = z.strictObject({ include: z.literal('lead_bookings') });

/** One request. A lead is read with its bookings, so its record hashes as in a list read. */
async function fetchOne(
  client: Client,
  resource: Resource,
  id: number,
): Promise<{ data: SourceItem; included?: SourceItem[] | undefined }> {
  switch (resource) {
    case 'leads':
      return client.transport.call('leads.get', {
        params: { lead_id: id },
        query: { include: 'lead_bookings' },
        querySchema: leadGetQuery,
        responseSchema: leadWithBookings,
      });
    case 'lead_bookings':
      return client.leadBookings.get(id);
    case 'events':
      return client.events.get(id);
    case 'event_bookings':
      return client.eventBookings.get(id);
    case 'appointments':
      return client.appointments.get(id);
  }
}

/**
 * Reads one record by id: exactly one request. null when the service answers 404 (deleted,
 * or never this business's), the deletion check of a complete pass.
 */
export async function readRecord(
  client: Client,
  resource: Resource,
  id: string,
): Promise<RecordRead | null> {
  const numeric = Number(id);
  if (!Number.isSafeInteger(numeric) || numeric <= 0) {
    throw new RangeError(`${resource} id '${id}' is not a positive integer`);
  }
  try {
    const answer = await fetchOne(client, resource, numeric);
    return {
      record: canonicalRecord(resource, answer.data),
      included: (answer.included ?? [])
        .filter((item) => item.type === 'lead_booking')
        .map((item) => canonicalRecord('lead_bookings', item)),
    };
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

export interface ManyRead {
  reads: RecordRead[];
  /** Ids the service answered 404 for. */
  missing: string[];
  /** Ids whose read failed, with why (only with `keepGoing`; otherwise the first error throws). */
  failed: { id: string; error: unknown }[];
  requests: number;
}

/** No further request can succeed now: a refusal, or a rate limit (wait as the service says). */
function stopsTheRest(error: unknown): boolean {
  return (
    error instanceof RateLimitedError || (error as { retryable?: unknown }).retryable === false
  );
}

/**
 * Reads records by id, at most `concurrency` requests at a time (one request per id): the
 * events that event bookings point to, leads reached only through their bookings.
 * `keepGoing` reads past a failed id, so a retry after a flaky moment only has the failures
 * left to read; a rate limit or a refusal still stops new requests.
 */
export async function readRecords(
  client: Client,
  resource: Resource,
  ids: readonly string[],
  options: { concurrency?: number; keepGoing?: boolean } = {},
): Promise<ManyRead> {
  const out: ManyRead = { reads: [], missing: [], failed: [], requests: 0 };
  let next = 0;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (next < ids.length && !stopped) {
      const id = ids[next];
      next += 1;
      if (id === undefined) continue;
      out.requests += 1;
      try {
        const read = await readRecord(client, resource, id);
        if (read) out.reads.push(read);
        else out.missing.push(id);
      } catch (error) {
        out.failed.push({ id, error });
        if (!options.keepGoing || stopsTheRest(error)) stopped = true;
      }
    }
  };
  const lanes = Math.max(1, Math.min(options.concurrency ?? 4, ids.length));
  await Promise.all(Array.from({ length: lanes }, worker));
  const first = out.failed[0];
  if (first && !options.keepGoing) throw first.error;
  return out;
}
