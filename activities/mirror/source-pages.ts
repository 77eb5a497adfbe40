import type { Client } from '../../api/client.js';
import type { Included, ListMeta } from '../../api/schemas/envelope.js';
import { canonicalRecord, type CanonicalRecord, type SourceItem } from '../../records/canonical.js';
import { leadSampleOf } from '../../records/lead-dimensions.js';
import {
  sampleDate,
  type PageStep,
  type PageSummary,
  type PartitionPlan,
} from '../../records/partition-plan.js';

/** A step that would ask for results past the reach limit: a bug in the caller, never sent. */
export class PastReachError extends Error {
  override readonly name = 'PastReachError';
  readonly retryable = false;
}

export interface FetchedPage {
  /** The page's records, canonical. */
  records: CanonicalRecord[];
  /** Records sideloaded with them: the lead bookings of a page of leads. */
  included: CanonicalRecord[];
  /** For applyPage: counts and cut values, no records. */
  summary: PageSummary;
}

interface ListAnswer {
  meta: ListMeta;
  data: SourceItem[];
  included?: Included[] | undefined;
}

const pick = (query: Readonly<Record<string, string>>, names: readonly string[]) =>
  Object.fromEntries(names.filter((n) => query[n] !== undefined).map((n) => [n, query[n]]));

/** The one list request of a step. */
function request(client: Client, plan: PartitionPlan, step: PageStep): Promise<ListAnswer> {
  const paging = { page: step.page, per: step.per };
  const q = step.query;
  switch (plan.resource) {
    case 'leads':
      return client.leads.list({
        ...pick(q, ['origin', 'lead_type', 'source', 'text', 'email']),
        include: 'lead_bookings',
        ...paging,
      });
    case 'lead_bookings':
      return client.leadBookings.list({
        ...pick(q, ['event_date_start', 'event_date_end']),
        ...paging,
      });
    case 'event_bookings':
      return client.eventBookings.list({
        ...pick(q, ['event_date_start', 'event_date_end']),
        ...paging,
      });
    case 'appointments':
      return client.appointments.list({ ...pick(q, ['start_date', 'end_date']), ...paging });
  }
}

/**
 * Fetches one page of one partition: exactly one request, never past the reach limit.
 * Returns the records in canonical form and the summary the plan needs.
 */
export async function fetchPage(
  client: Client,
  plan: PartitionPlan,
  step: PageStep,
): Promise<FetchedPage> {
  // A page is past the reach when its first result is; the service cuts a partial last page,
  // and a first page larger than the reach is such a page (a query read at a `per` chosen
  // before the plan learned a reach below it).
  if ((step.page - 1) * step.per >= plan.reachLimit) {
    throw new PastReachError(
      `page ${step.page} at per ${step.per} asks past the reach limit ${plan.reachLimit}`,
    );
  }
  const answer = await request(client, plan, step);
  const records = answer.data.map((item) => canonicalRecord(plan.resource, item));
  const included = (answer.included ?? [])
    .filter((item) => item.type === 'lead_booking')
    .map((item) => canonicalRecord('lead_bookings', item));
  const summary: PageSummary = {
    totalCount: answer.meta.total_count ?? answer.data.length,
    perPage: answer.meta.per_page ?? step.per,
    items: answer.data.length,
  };
  if (plan.resource === 'leads') {
    summary.leads = answer.data.map((i) => leadSampleOf(i.attributes));
    summary.ids = answer.data.map((i) => i.id);
  } else summary.dates = answer.data.map((i) => sampleDate(i.attributes));
  return { records, included, summary };
}

/**
 * The whole list's total_count as the service counts it now: one request for one result of
 * the plan's root query. A pass that comes up short asks it before calling anything
 * unreachable, since records deleted while it read leave the first count too high.
 */
export async function recountRoot(client: Client, plan: PartitionPlan): Promise<number> {
  const root = plan.nodes[0];
  if (!root) return 0;
  const answer = await request(client, plan, {
    node: 0,
    epoch: root.epoch,
    page: 1,
    per: 1,
    query: root.query,
  });
  return answer.meta.total_count ?? answer.data.length;
}

/** What a failed read threw, as an Error (a rejection may carry anything). */
export const asError = (error: unknown): Error =>
  error instanceof Error ? error : new Error(`read failed: ${String(error)}`, { cause: error });
