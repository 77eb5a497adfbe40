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
} from '../../records/canonical.js';

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

/** A record to read by id. */
export interface RecordTarget {
  resource: Resource;
  id: string;
}

export interface EachRead<T extends RecordTarget> {
  /** What the service answered, per target: the record, or null for its 404. */
  answered: { target: T; read: RecordRead | null }[];
  /** Targets whose read failed, with why (only with `keepGoing`). */
  failed: { target: T; error: unknown }[];
  requests: number;
}

/**
 * Rounds of ReadOptions.again for a caller that must settle a window of reads: a read failing
 * 30 % of the time still fails after them about once in 1,400.
 */
export const AGAIN = 5;

export interface ReadOptions {
  /** Requests at once (default 4). */
  concurrency?: number;
  /** Read past a failed target; a rate limit or a refusal still stops new requests. */
  keepGoing?: boolean;
  /** Told after each answer (an activity heartbeats). */
  onAnswer?: () => void;
  /**
   * Epoch ms after which no new request starts (those under way still end; one always
   * starts): the targets not asked for are in neither `answered` nor `failed`, and the caller
   * asks for them later.
   */
  until?: number;
  /**
   * With `keepGoing`: rounds in which the reads that failed (a 5xx, a dropped connection; not a
   * rate limit or a refusal) are asked once more, each while the round before answered some.
   * For callers that cannot carry what a window answered over to the activity's retry: without
   * them, one failure in a window that the retry must read whole (ids answered 404 that no
   * store records) makes every retry fail again once a window outgrows a few reads. Default 0.
   */
  again?: number;
}

/**
 * Reads records of any tables by id, at most `concurrency` requests at a time (one request
 * per target). Without `keepGoing` the first failure throws once the reads under way end.
 */
export async function readEach<T extends RecordTarget>(
  client: Client,
  targets: readonly T[],
  options: ReadOptions = {},
): Promise<EachRead<T>> {
  const out: EachRead<T> = { answered: [], failed: [], requests: 0 };
  let stopped = false;
  const readAll = async (list: readonly T[]): Promise<void> => {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < list.length && !stopped) {
        // One request at least, so that a caller asking again makes progress each time.
        if (options.until !== undefined && out.requests > 0 && Date.now() >= options.until) {
          return;
        }
        const target = list[next];
        next += 1;
        if (target === undefined) continue;
        out.requests += 1;
        try {
          out.answered.push({ target, read: await readRecord(client, target.resource, target.id) });
        } catch (error) {
          out.failed.push({ target, error });
          if (!options.keepGoing || stopsTheRest(error)) stopped = true;
        }
        options.onAnswer?.();
      }
    };
    const lanes = Math.max(1, Math.min(options.concurrency ?? 4, list.length));
    await Promise.all(Array.from({ length: lanes }, lane));
  };
  await readAll(targets);
  for (let round = 0; round < (options.again ?? 0) && options.keepGoing; round += 1) {
    const failed = out.failed;
    if (stopped || failed.length === 0 || failed.some((f) => stopsTheRest(f.error))) break;
    const answeredBefore = out.answered.length;
    out.failed = [];
    await readAll(failed.map((f) => f.target));
    // Those not asked (past `until`) stay failed, as they were.
    const asked = new Set([...out.answered, ...out.failed].map((a) => a.target));
    out.failed.push(...failed.filter((f) => !asked.has(f.target)));
    if (out.answered.length === answeredBefore) break;
  }
  const first = out.failed[0];
  if (first && !options.keepGoing) throw first.error;
  return out;
}

/**
 * Reads records of one table by id (readEach): the events that event bookings point to, leads
 * reached only through their bookings. `keepGoing` reads past a failed id, so a retry after a
 * flaky moment only has the failures left to read.
 */
export async function readRecords(
  client: Client,
  resource: Resource,
  ids: readonly string[],
  options: ReadOptions = {},
): Promise<ManyRead> {
  const each = await readEach(
    client,
    ids.map((id) => ({ resource, id })),
    options,
  );
  return {
    reads: each.answered.flatMap((a) => (a.read ? [a.read] : [])),
    missing: each.answered.flatMap((a) => (a.read ? [] : [a.target.id])),
    failed: each.failed.map((f) => ({ id: f.target.id, error: f.error })),
    requests: each.requests,
  };
}
