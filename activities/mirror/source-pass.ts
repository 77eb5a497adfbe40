import type { Client } from '../../api/client.js';
import type { CanonicalRecord } from '../../records/canonical.js';
import {
  applyPage,
  createPlan,
  markFresh,
  planComplete,
  planReport,
  readySteps,
  stepKey,
  type ListResource,
  type PageStep,
  type PartitionPlan,
  type PlanOptions,
  type PlanReport,
} from '../../records/partition-plan.js';
import { asError, fetchPage, type FetchedPage } from './source-pages.js';
import { readRecords } from './records-by-id.js';

/**
 * Whole reads in one process: a plan driven to its end with a few pages in flight. The
 * mirror's activities drive the same plan one page per activity; these serve the naive loop
 * of the benchmark, tests and small tools.
 */
export interface DriveOptions {
  /** Pages in flight at once (default 4). */
  concurrency?: number;
  /** Every page the plan keeps (not probes, nor answers for a reset query), as answers arrive. */
  onPage?: (page: FetchedPage, step: PageStep) => void | Promise<void>;
  /**
   * Start no more than this many pages, then return once they are handled: the plan may be
   * left incomplete, to be driven on later (the mirror's activities do a slice each).
   */
  maxPages?: number;
  /** Once aborted, no new page is started; those in flight are handled, then it returns. */
  signal?: AbortSignal;
}

export class PlanStuckError extends Error {
  override readonly name = 'PlanStuckError';
  readonly retryable = false;
}

/**
 * Fetches and applies pages until the plan is complete (or `maxPages` were handled). Each
 * page is handed to `onPage` as soon as it arrives while the others stay in flight, so
 * writing one page overlaps fetching the next.
 */
export async function drivePlan(
  client: Client,
  plan: PartitionPlan,
  options: DriveOptions = {},
): Promise<PartitionPlan> {
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const inFlight = new Map<string, Promise<void>>();
  // Leads seen by this drive: each is counted once in the plan's `held` (markFresh).
  const seen = new Set<string>();
  let failure: unknown;
  let left = options.maxPages ?? Infinity;
  while (!planComplete(plan) && (left > 0 || inFlight.size > 0)) {
    if (options.signal?.aborted) left = 0;
    const steps = readySteps(plan, {
      max: Math.min(left, concurrency - inFlight.size),
      skip: new Set(inFlight.keys()),
    });
    left -= steps.length;
    for (const step of steps) {
      const key = stepKey(step);
      const run = fetchPage(client, plan, step)
        .then(async (page) => {
          markFresh(page.summary, (id) => !seen.has(id));
          if (!applyPage(plan, step, page.summary)) return;
          for (const id of page.summary.ids ?? []) seen.add(id);
          await options.onPage?.(page, step);
        })
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, run);
    }
    if (inFlight.size === 0) {
      throw new PlanStuckError(`${plan.resource}: plan incomplete with nothing left to fetch`);
    }
    await Promise.race(inFlight.values());
    if (failure !== undefined) {
      await Promise.allSettled(inFlight.values());
      throw asError(failure);
    }
  }
  // The last page applied completes the plan while earlier pages may still be in onPage.
  await Promise.all(inFlight.values());
  if (failure !== undefined) throw asError(failure);
  return plan;
}

export interface ResourceRead {
  report: PlanReport;
  /** Distinct records reached. */
  reached: number;
  /** total_count of the whole read minus reached (never negative). */
  unreachable: number;
}

function readOf(report: PlanReport, reached: number): ResourceRead {
  return { report, reached, unreachable: Math.max(0, (report.totalCount ?? 0) - reached) };
}

export interface LeadRead {
  leads: ResourceRead & {
    /** Leads reached only through their bookings, read one by one. */
    readById: number;
    /** All requests of the lead pass: lead pages and reads by id. */
    requests: number;
  };
  leadBookings: ResourceRead;
}

/**
 * Every lead and lead booking: leads (with their bookings sideloaded) through the cuts of
 * the filters, lead bookings through date windows, and the leads that only their bookings
 * reveal read by id. `onRecords` gets every record as read (a record may come twice).
 */
export async function readLeadsAndBookings(
  client: Client,
  options: PlanOptions &
    DriveOptions & { onRecords?: (records: CanonicalRecord[]) => void | Promise<void> } = {},
): Promise<LeadRead> {
  const leadIds = new Set<string>();
  const bookingIds = new Set<string>();
  const bookingLeads = new Set<string>();
  const take = async (records: CanonicalRecord[]) => {
    for (const r of records) {
      if (r.resource === 'leads') leadIds.add(r.id);
      else if (r.resource === 'lead_bookings') {
        bookingIds.add(r.id);
        const leadId = r.attributes.lead_id;
        if (leadId !== null && leadId !== undefined) bookingLeads.add(String(leadId));
      }
    }
    await options.onRecords?.(records);
  };
  // The lead filters of `query` restrict the leads; the bookings' windows are their own.
  const bookingOptions = { ...options };
  delete bookingOptions.query;
  const leadPlan = await drivePlan(client, createPlan('leads', options), {
    ...options,
    onPage: async (page, step) => {
      await take([...page.records, ...page.included]);
      await options.onPage?.(page, step);
    },
  });
  const bookingPlan = await drivePlan(client, createPlan('lead_bookings', bookingOptions), {
    ...options,
    onPage: async (page, step) => {
      await take(page.records);
      await options.onPage?.(page, step);
    },
  });
  const unseen = [...bookingLeads]
    .filter((id) => !leadIds.has(id))
    .sort((a, b) => Number(a) - Number(b));
  const byId = await readRecords(client, 'leads', unseen, options);
  await take(byId.reads.flatMap((r) => [r.record, ...r.included]));
  const leadReport = planReport(leadPlan);
  return {
    leads: {
      ...readOf(leadReport, leadIds.size),
      readById: byId.requests,
      requests: leadReport.requests + byId.requests,
    },
    leadBookings: readOf(planReport(bookingPlan), bookingIds.size),
  };
}

export interface EventRead {
  eventBookings: ResourceRead;
  /** Events reached through their bookings, each read by id. */
  events: { reached: number; missing: string[]; requests: number };
}

/** Event bookings by date window, then each event they name, read by id. */
export async function readEventsAndBookings(
  client: Client,
  options: PlanOptions &
    DriveOptions & { onRecords?: (records: CanonicalRecord[]) => void | Promise<void> } = {},
): Promise<EventRead> {
  const bookingIds = new Set<string>();
  const eventIds = new Set<string>();
  const plan = await drivePlan(client, createPlan('event_bookings', options), {
    ...options,
    onPage: async (page) => {
      for (const r of page.records) {
        bookingIds.add(r.id);
        if (r.attributes.event_id !== null && r.attributes.event_id !== undefined) {
          eventIds.add(String(r.attributes.event_id));
        }
      }
      await options.onRecords?.(page.records);
    },
  });
  const events = await readRecords(client, 'events', [...eventIds], options);
  await options.onRecords?.(events.reads.map((r) => r.record));
  return {
    eventBookings: readOf(planReport(plan), bookingIds.size),
    events: { reached: events.reads.length, missing: events.missing, requests: events.requests },
  };
}

/** Any dated list read whole (appointments, or one of the booking lists alone). */
export async function readList(
  client: Client,
  resource: Exclude<ListResource, 'leads'>,
  options: PlanOptions &
    DriveOptions & { onRecords?: (records: CanonicalRecord[]) => void | Promise<void> } = {},
): Promise<ResourceRead> {
  const ids = new Set<string>();
  const plan = await drivePlan(client, createPlan(resource, options), {
    ...options,
    onPage: async (page) => {
      for (const r of page.records) ids.add(r.id);
      await options.onRecords?.(page.records);
    },
  });
  return readOf(planReport(plan), ids.size);
}
