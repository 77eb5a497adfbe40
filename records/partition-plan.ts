import { z } from 'zod';
import { dateOf, splitWindow, type DateWindow } from './date-windows.js';
import {
  LEAD_DIMENSIONS,
  WORD_DIMENSIONS,
  discover,
  isDisjoint,
  isTextTerm,
  rankDimensions,
  recutChoice,
  type DimensionChoice,
  type LeadDimension,
  type LeadSample,
} from './lead-dimensions.js';

/**
 * The partition plan of one list read: which queries to page so that every result is asked
 * for within the reach limit (DESIGN decision 6). It is plain JSON that holds queries, counts
 * and filter values, never records, so it can live in an activity's heartbeat or a
 * checkpoint; its functions do no I/O. A reader asks `readySteps` for pages to fetch (each
 * one request, see source-pages.ts) and gives each answer's summary to `applyPage`, which
 * splits a query whose total_count is over the limit as soon as its first page shows it,
 * before anything past the limit is asked for.
 */
export type ListResource = 'leads' | 'lead_bookings' | 'event_bookings' | 'appointments';
export const LIST_RESOURCES: readonly ListResource[] = [
  'leads',
  'lead_bookings',
  'event_bookings',
  'appointments',
];

/** The query parameters of a dated list's window. */
export const WINDOW_PARAMS: Readonly<
  Record<Exclude<ListResource, 'leads'>, { start: string; end: string }>
> = {
  lead_bookings: { start: 'event_date_start', end: 'event_date_end' },
  event_bookings: { start: 'event_date_start', end: 'event_date_end' },
  appointments: { start: 'start_date', end: 'end_date' },
};

const dimensionSchema = z.enum(LEAD_DIMENSIONS);
const sampleSchema = z.object({
  origin: z.string().nullable(),
  lead_type: z.string().nullable(),
  source: z.string().nullable(),
  domain: z.string().nullable(),
  words: z.partialRecord(z.enum(WORD_DIMENSIONS), z.string().nullable()).optional(),
  fresh: z.boolean().optional(),
});
const choiceSchema = z.object({
  dimension: dimensionSchema,
  values: z.array(z.string()),
  coverage: z.number(),
  /** Share of the sample that neither this nor any earlier choice reaches. */
  missing: z.number(),
  /** Requests the cut was priced at when planned. */
  cost: z.number().optional(),
});
type Choice = z.infer<typeof choiceSchema>;

const nodeSchema = z.object({
  id: z.number().int().nonnegative(),
  parent: z.number().int().nonnegative().nullable(),
  /** The list's own query parameters (filters, or the window's dates). */
  query: z.record(z.string(), z.string()),
  /** Dimensions this query may no longer be cut by. */
  spent: z.array(dimensionSchema),
  /**
   * new: nothing read; reading: pages to read are known; split: cut into children (its first
   * page was a probe); waiting: over the reach, to be cut by words once the rest of the plan
   * is read (the words seen by then make the cut); done: every page read.
   */
  status: z.enum(['new', 'reading', 'split', 'waiting', 'done']),
  /**
   * Bumped whenever the query is reset (a learned reach, a re-read): answers to steps of an
   * earlier epoch, still in flight when it was reset, are ignored.
   */
  epoch: z.number().int().nonnegative().default(0),
  total: z.number().int().nonnegative().nullable(),
  perPage: z.number().int().positive().nullable(),
  /** Pages to read: all, or only the reachable ones of a query that cannot be cut further. */
  pages: z.number().int().nonnegative().nullable(),
  /** Pages whose answers were applied. */
  done: z.array(z.number().int().positive()),
  /**
   * Its total_count moved while its pages were read (records created or deleted meanwhile):
   * offsets shifted, so a record may have slipped between two pages. Read again when the
   * pass comes up short (rereadMoved).
   */
  moved: z.boolean().default(false),
  rereads: z.number().int().nonnegative().default(0),
  /** Distinct leads seen (each when first seen) that this query holds: see creditFresh. */
  held: z.number().int().nonnegative().default(0),
  /**
   * Of the results its own pages brought (probes not counted), those the pass saw for the
   * first time: the share of its results no other query reached, which scales what lies
   * past its reach (see refineGaps).
   */
  kept: z.number().int().nonnegative().default(0),
  keptFresh: z.number().int().nonnegative().default(0),
  /**
   * `held` counts every lead the query holds that the pass saw: nothing it holds was seen
   * before it existed (its parent held none yet), or it is a cover, which takes its query's.
   */
  exact: z.boolean().default(false),
  /** A waiting query's first page, as samples for the cut it waits for. */
  sample: z.array(sampleSchema).optional(),
  split: z
    .object({
      dimension: z.union([dimensionSchema, z.literal('date')]),
      children: z.array(z.number().int().nonnegative()),
      coverage: z.number(),
      missing: z.number(),
      /** Further cuts of the same query, for what these children miss. */
      next: z.array(choiceSchema),
      /** What its parts' counts prove is acted on (or nothing can be proved by counts). */
      settled: z.boolean(),
      /** What everything under it read was checked against its total. */
      verified: z.boolean().default(false),
    })
    .nullable(),
});
export type PlanNode = z.infer<typeof nodeSchema>;

const gapSchema = z.object({
  node: z.number().int().nonnegative(),
  query: z.record(z.string(), z.string()),
  /**
   * single_day: one day's results exceed the limit; filters_exhausted: no filter left to cut
   * by (the reachable part is read); residual_skipped: too few results for the requests
   * another cut would cost; undated: results without a date, outside every window.
   */
  reason: z.enum(['single_day', 'filters_exhausted', 'residual_skipped', 'undated']),
  /** Results no page of this query reaches: exact for dates and equality filters, estimated otherwise. */
  count: z.number().int().nonnegative(),
  /** The cuts tried on this query before it was called a gap (dimension names, or 'date'). */
  tried: z.array(z.string()).default([]),
  /**
   * `count` is all its query holds past the reach, until its reading is done: then it is
   * scaled by the share of what its pages brought that the pass had not seen elsewhere (a
   * part of an overlapping cut holds much that its siblings read).
   */
  byShare: z.boolean().optional(),
});
export type PlanGap = z.infer<typeof gapSchema>;

export const partitionPlanSchema = z.object({
  version: z.literal(1),
  resource: z.enum(['leads', 'lead_bookings', 'event_bookings', 'appointments']),
  /** Page size asked for; the service may grant less. */
  per: z.number().int().positive(),
  /**
   * The reach the plan works with: the configured one at first, lowered when a page shows a
   * smaller one (learnReach). Never raised: a reach that looks larger is never relied on.
   */
  reachLimit: z.number().int().positive(),
  /** What a page showed of the service's real reach, when it was below the setting. */
  learned: z
    .object({
      /** The configured reach, the plan's first guess. */
      configured: z.number().int().positive(),
      reach: z.number().int().positive(),
      /** The evidence: a page of a query holding fewer results than its total_count promised. */
      page: z.number().int().positive(),
      per: z.number().int().positive(),
      items: z.number().int().nonnegative(),
      total: z.number().int().nonnegative(),
      /** Queries reset to be cut again under it. */
      reset: z.number().int().nonnegative(),
    })
    .nullable()
    .default(null),
  /** Extra reading for results the cuts miss happens when it should reach this many per request. */
  minYield: z.number().nonnegative(),
  nodes: z.array(nodeSchema),
  /** Filter values seen so far, with counts (leads). */
  discovered: z.record(z.string(), z.record(z.string(), z.number())),
  requests: z.number().int().nonnegative(),
  itemsRead: z.number().int().nonnegative(),
  gaps: z.array(gapSchema),
  /**
   * Records a page named that the service answered 404 for when read by id (the lead of a
   * booking deleted at the service): not asked again in this pass. A slice that ran out of
   * time reading a page's records asked them all again in the next one, so a page naming
   * more deleted records than a slice could read at the service's pace was never whole, and
   * the pass went round for ever.
   */
  missingById: z.array(z.string()).default([]),
});
export type PartitionPlan = z.infer<typeof partitionPlanSchema>;

export interface PlanOptions {
  /** Page size to ask for (default 100); the largest the service grants is best. */
  per?: number;
  /** The service's reach limit (default 10,000). */
  reachLimit?: number;
  /**
   * See PartitionPlan.minYield (default 1: a further cut must find a lead per request, no
   * worse than reading leads one by one; 0 tries every cut).
   */
  minYield?: number;
  /** Restricts the read: a date window for the dated lists, filters for leads. */
  query?: Readonly<Record<string, string>>;
}

export function createPlan(resource: ListResource, options: PlanOptions = {}): PartitionPlan {
  const reachLimit = options.reachLimit ?? 10_000;
  return {
    version: 1,
    resource,
    per: Math.min(options.per ?? 100, reachLimit),
    reachLimit,
    minYield: options.minYield ?? 1,
    nodes: [{ ...newNode(0, null, { ...options.query }, []), exact: true }],
    learned: null,
    discovered: {},
    requests: 0,
    itemsRead: 0,
    gaps: [],
    missingById: [],
  };
}

function newNode(
  id: number,
  parent: number | null,
  query: Record<string, string>,
  spent: LeadDimension[],
): PlanNode {
  return {
    id,
    parent,
    query,
    spent,
    status: 'new',
    epoch: 0,
    total: null,
    perPage: null,
    pages: null,
    done: [],
    moved: false,
    rereads: 0,
    held: 0,
    kept: 0,
    keptFresh: 0,
    exact: false,
    split: null,
  };
}

/** One request: page `page` of `query` at `per` (exactly what source-pages.ts sends). */
export interface PageStep {
  node: number;
  /** The node's epoch when the step was made: an answer for an earlier epoch is ignored. */
  epoch: number;
  page: number;
  per: number;
  query: Record<string, string>;
}

export const stepKey = (step: Pick<PageStep, 'node' | 'epoch' | 'page'>): string =>
  `${step.node}.${step.epoch}:${step.page}`;

/**
 * Pages that can be fetched now, in plan order: first pages of new queries and the remaining
 * pages of queries known to fit. `skip` holds keys (stepKey) already in flight.
 */
export function readySteps(
  plan: PartitionPlan,
  options: { max?: number; skip?: ReadonlySet<string> } = {},
): PageStep[] {
  const max = options.max ?? Infinity;
  const out: PageStep[] = [];
  for (const node of plan.nodes) {
    if (out.length >= max) break;
    if (node.status === 'new') {
      const step = { node: node.id, epoch: node.epoch, page: 1, per: plan.per, query: node.query };
      if (!options.skip?.has(stepKey(step))) out.push(step);
    } else if (node.status === 'reading' && node.pages !== null && node.perPage !== null) {
      for (let page = 1; page <= node.pages && out.length < max; page += 1) {
        const step = {
          node: node.id,
          epoch: node.epoch,
          page,
          per: node.perPage,
          query: node.query,
        };
        if (!node.done.includes(page) && !options.skip?.has(stepKey(step))) out.push(step);
      }
    }
  }
  // Nothing left to ask and nothing on its way: the queries waiting for words are cut now.
  if (out.length === 0 && (options.skip?.size ?? 0) === 0 && releaseWaiting(plan) > 0) {
    return readySteps(plan, options);
  }
  return out;
}

/** What a fetched page tells the plan: counts and the values to cut by, never the records. */
export interface PageSummary {
  totalCount: number;
  /** meta.per_page: the page size granted. */
  perPage: number;
  items: number;
  /** Leads: one entry per lead. */
  leads?: LeadSample[];
  /** Leads: their ids, in the order of `leads` (for markFresh; the plan keeps none). */
  ids?: string[];
  /** Dated lists: each result's date (YYYY-MM-DD) or null. */
  dates?: (string | null)[];
}

/**
 * Marks the leads of a page this pass sees for the first time, as the caller knows them (the
 * ledger in a mirror activity, a set of ids elsewhere), so each is counted once in `held`.
 */
export function markFresh(summary: PageSummary, isFresh: (id: string) => boolean): void {
  summary.leads?.forEach((sample, i) => {
    const id = summary.ids?.[i];
    sample.fresh = id !== undefined && isFresh(id);
  });
}

/**
 * Applies the answer of one step (in place); returns whether its records are the plan's to
 * keep. An answer applied twice changes nothing more, and one for a query reset since the step
 * was made (a learned reach) is ignored. A probe's records are not kept either: the parts of
 * its cut read them again, and a record is kept (written, counted in `held`) where it is read
 * for good, once.
 */
export function applyPage(plan: PartitionPlan, step: PageStep, summary: PageSummary): boolean {
  const node = plan.nodes[step.node];
  if (!node) throw new RangeError(`partition plan has no node ${step.node}`);
  plan.requests += 1;
  plan.itemsRead += summary.items;
  if (summary.leads) discover(plan.discovered, summary.leads);
  // What a page shows of the reach holds whatever became of its query since it was asked.
  const reach = shownReach(step, summary);
  if (reach !== undefined && reach < plan.reachLimit) learnReach(plan, reach, step, summary);
  // A query reset since (under a new reach, maybe this page's) has its first page asked again.
  if (node.epoch !== step.epoch || node.done.includes(step.page)) return false;
  node.done.push(step.page);
  if (node.total === null) firstPage(plan, node, summary);
  else if (summary.totalCount !== node.total) totalMoved(plan, node, summary.totalCount);
  // A probe (the first page of a query then cut, or left waiting) is read again by its parts.
  const kept = node.status === 'reading' || node.status === 'done';
  if (kept && summary.leads) {
    creditFresh(plan, summary.leads);
    node.kept += summary.leads.length;
    node.keptFresh += summary.leads.filter((s) => s.fresh).length;
  }
  if (node.status === 'reading' && node.pages !== null && node.done.length >= node.pages) {
    node.status = 'done';
    refineGaps(plan, node);
    settleUp(plan, node.id);
  }
  return kept;
}

/**
 * The reach a page shows, if it shows one: a page holding fewer results than its own
 * total_count promises stops at the reach ((page - 1) x per + items). A page is one snapshot,
 * so its count and its items agree even when records come and go between pages: a total that
 * moved shows as a different total_count, never as a short page.
 */
function shownReach(step: PageStep, summary: PageSummary): number | undefined {
  const per = summary.perPage > 0 ? summary.perPage : step.per;
  const offset = (step.page - 1) * per;
  const promised = Math.max(0, Math.min(per, summary.totalCount - offset));
  if (summary.items >= promised) return undefined;
  // An empty page bounds the reach from above (at its offset); later pages tell it closer.
  return Math.max(1, offset + summary.items);
}

/**
 * Lowers the plan's reach to what a page showed: every query read or being read whose total
 * is over it is reset (a new epoch; its first page is asked again and cut like any query
 * over the reach), and the gaps counted under the old reach go with them.
 */
function learnReach(plan: PartitionPlan, reach: number, step: PageStep, summary: PageSummary) {
  const reset = plan.nodes.filter(
    (n) => (n.status === 'reading' || n.status === 'done') && (n.total ?? 0) > reach,
  );
  for (const node of reset) resetNode(plan, node);
  plan.learned = {
    configured: plan.learned?.configured ?? plan.reachLimit,
    reach,
    page: step.page,
    per: summary.perPage > 0 ? summary.perPage : step.per,
    items: summary.items,
    total: summary.totalCount,
    reset: (plan.learned?.reset ?? 0) + reset.length,
  };
  plan.reachLimit = reach;
  plan.per = Math.min(plan.per, reach);
}

/** Forgets what was read of a query (a new epoch), so it is asked and planned afresh. */
function resetNode(plan: PartitionPlan, node: PlanNode): void {
  plan.gaps = plan.gaps.filter((g) => g.node !== node.id);
  Object.assign(node, {
    status: 'new',
    epoch: node.epoch + 1,
    total: null,
    perPage: null,
    pages: null,
    done: [],
    moved: false,
    kept: 0,
    keptFresh: 0,
  } satisfies Partial<PlanNode>);
}

/** A query's total_count moved between its pages: the pages to read follow the new count. */
function totalMoved(plan: PartitionPlan, node: PlanNode, total: number): void {
  node.moved = true;
  const limited = (node.total ?? 0) > plan.reachLimit;
  node.total = total;
  if (node.status !== 'reading' || node.perPage === null) return;
  if (total > plan.reachLimit && !limited) {
    // It no longer fits: cut it like any query over the reach.
    resetNode(plan, node);
    return;
  }
  if (limited) {
    const gap = plan.gaps.find((g) => g.node === node.id);
    if (gap) gap.count = Math.max(0, total - plan.reachLimit);
    if (total > plan.reachLimit) return;
  }
  node.pages = Math.ceil(total / node.perPage);
}

/**
 * Reads again every query whose total moved while it was read (a record may have slipped
 * between its pages), each at most twice. The pass calls it once the plan is done, whatever
 * it reached (records deleted meanwhile count as reached); returns how many queries were reset.
 */
export function rereadMoved(plan: PartitionPlan): number {
  const moved = plan.nodes.filter((n) => n.moved && n.status === 'done' && n.rereads < MAX_REREADS);
  for (const node of moved) {
    node.rereads += 1;
    resetNode(plan, node);
  }
  return moved.length;
}
const MAX_REREADS = 2;

function firstPage(plan: PartitionPlan, node: PlanNode, summary: PageSummary): void {
  node.total = summary.totalCount;
  node.perPage = summary.perPage;
  if (node.total <= plan.reachLimit) {
    node.pages = Math.ceil(node.total / node.perPage);
    node.status = 'reading';
  } else if (!cut(plan, node, summary)) {
    readReachable(plan, node, plan.resource === 'leads' ? 'filters_exhausted' : 'single_day');
  }
  if (node.parent !== null) settleIfCounted(plan, node.parent);
}

/** The cuts a query was tried with before a gap was left in it. */
function triedOn(plan: PartitionPlan, node: PlanNode, more: readonly string[] = []): string[] {
  if (plan.resource !== 'leads') return ['date'];
  return [...new Set([...node.spent, ...more, ...LEAD_DIMENSIONS])];
}

/** An uncuttable query over the limit: its reachable pages are read, the rest is a gap. */
function readReachable(
  plan: PartitionPlan,
  node: PlanNode,
  reason: PlanGap['reason'],
  count?: number,
  tried?: string[],
): void {
  const perPage = node.perPage ?? plan.per;
  // The last reachable page may be partial (a reach limit that is no multiple of the page).
  node.pages = Math.ceil(plan.reachLimit / perPage);
  node.status = 'reading';
  const hidden = Math.max(0, count ?? (node.total ?? 0) - plan.reachLimit);
  if (hidden > 0) {
    plan.gaps.push({
      node: node.id,
      query: node.query,
      reason,
      count: hidden,
      tried: tried ?? triedOn(plan, node),
      ...(count === undefined && plan.resource === 'leads' ? { byShare: true } : {}),
    });
  }
}

/**
 * A query read only as far as it reaches, now read: of what lies past its reach, count the
 * share its pages showed to be new to the pass. Counting all of it would let a gap in one
 * part of an overlapping cut stand for leads that other parts read, and hide from the query
 * above what no part reached (settleIfCounted subtracts the gaps below it).
 */
function refineGaps(plan: PartitionPlan, node: PlanNode): void {
  if (plan.resource !== 'leads' || node.kept === 0) return;
  for (const gap of plan.gaps) {
    if (gap.node !== node.id || gap.byShare !== true) continue;
    gap.count = Math.ceil((gap.count * node.keptFresh) / node.kept);
    delete gap.byShare;
  }
}

function addChild(
  plan: PartitionPlan,
  parent: PlanNode,
  query: Record<string, string>,
  spent: LeadDimension[],
): number {
  const id = plan.nodes.length;
  // A part holds nothing its parent did not: if the parent held none yet, neither does it.
  plan.nodes.push({
    ...newNode(id, parent.id, query, spent),
    exact: parent.exact && parent.held === 0,
  });
  return id;
}

/** Cuts an over-limit query into children; false when it cannot be cut. */
function cut(plan: PartitionPlan, node: PlanNode, summary: PageSummary): boolean {
  if (plan.resource === 'leads') {
    const samples = summary.leads ?? [];
    const [first, ...next] = leadRanking(plan, node, samples);
    if (!first) return false;
    if (isWord(first.dimension)) {
      // A cut by words is as complete as the words known: it waits for the rest of the plan.
      node.status = 'waiting';
      node.sample = samples;
      return true;
    }
    cutBy(plan, node, first, next);
    return true;
  }
  const params = WINDOW_PARAMS[plan.resource];
  const window: DateWindow = {
    ...(node.query[params.start] !== undefined ? { start: node.query[params.start] } : {}),
    ...(node.query[params.end] !== undefined ? { end: node.query[params.end] } : {}),
  };
  const parts = splitWindow(window, summary.dates ?? [], node.total ?? 0, plan.reachLimit);
  if (parts === null) return false;
  const children = parts.map((part) => {
    const query = { ...node.query };
    delete query[params.start];
    delete query[params.end];
    if (part.start !== undefined) query[params.start] = part.start;
    if (part.end !== undefined) query[params.end] = part.end;
    return addChild(plan, node, query, []);
  });
  node.status = 'split';
  node.split = {
    dimension: 'date',
    children,
    coverage: 1,
    missing: 0,
    next: [],
    settled: false,
    verified: false,
  };
  return true;
}

/** Cuts by text terms wait for the words (and domains) the rest of the plan shows. */
const isWord = (dimension: LeadDimension): boolean => isTextTerm(dimension);

function leadRanking(
  plan: PartitionPlan,
  node: PlanNode,
  samples: readonly LeadSample[],
): Choice[] {
  return withMissing(
    rankDimensions(node.spent, samples, plan.discovered, {
      total: node.total ?? 0,
      per: node.perPage ?? plan.per,
      reach: plan.reachLimit,
    }),
    samples,
  );
}

/**
 * Cuts the queries waiting for words, with every word read so far; readySteps calls it when
 * nothing else is left to ask. Returns how many were cut.
 */
function releaseWaiting(plan: PartitionPlan): number {
  const waiting = plan.nodes.filter((n) => n.status === 'waiting');
  for (const node of waiting) {
    const samples = node.sample ?? [];
    delete node.sample;
    const [first, ...next] = leadRanking(plan, node, samples);
    if (first) cutBy(plan, node, first, next);
    else readReachable(plan, node, 'filters_exhausted');
    if (node.parent !== null) settleIfCounted(plan, node.parent);
  }
  return waiting.length;
}

function cutBy(plan: PartitionPlan, node: PlanNode, choice: Choice, next: Choice[]): void {
  const spent = [...node.spent, choice.dimension];
  // Text terms add up: a part of a domain searches the domain and its word together.
  const children = choice.values.map((value) =>
    addChild(
      plan,
      node,
      isTextTerm(choice.dimension)
        ? { ...node.query, text: [node.query.text, value].filter(Boolean).join(' ') }
        : { ...node.query, [choice.dimension]: value },
      spent,
    ),
  );
  node.status = 'split';
  node.split = {
    dimension: choice.dimension,
    children,
    coverage: choice.coverage,
    missing: choice.missing,
    next,
    settled: false,
    verified: false,
  };
}

/** Each choice with the share of the sample that it and every earlier choice still miss. */
function withMissing(ranking: DimensionChoice[], samples: readonly LeadSample[]): Choice[] {
  let remaining = samples;
  return ranking.map((choice) => {
    const values = new Set(choice.values);
    remaining = remaining.filter((s) => !reaches(choice.dimension, values, s));
    return { ...choice, missing: samples.length === 0 ? 0 : remaining.length / samples.length };
  });
}

function reaches(dimension: LeadDimension, values: ReadonlySet<string>, s: LeadSample): boolean {
  if (dimension === 'text') return s.domain !== null && values.has(s.domain);
  if (dimension === 'origin' || dimension === 'lead_type' || dimension === 'source') {
    const value = s[dimension];
    return value !== null && values.has(value);
  }
  const word = s.words?.[dimension];
  return word !== null && word !== undefined && values.has(word);
}

/**
 * What a cut missed, in two steps. First, an equality or date cut's parts are disjoint, so
 * once every part has its total their counts prove what it missed (results without a value),
 * and that is read through a cover at once. Then, for leads, once everything under the query
 * is read: its total minus the distinct leads seen that it holds (`held`) and minus the gaps
 * below it is what no cut under it reached; more than none is read through a cover by the
 * next dimension. Only a query whose `held` counts all it holds (`exact`) can say so; the
 * others leave it to the exact query above them.
 */
function settleIfCounted(plan: PartitionPlan, id: number): void {
  const node = plan.nodes[id];
  const split = node?.split;
  if (!node || !split) return;
  const total = node.total ?? 0;
  if (!split.settled) {
    if (isDisjoint(split.dimension) && !isCover(plan, node)) {
      const totals = split.children.map((c) => plan.nodes[c]?.total ?? null);
      if (totals.some((t) => t === null)) return;
      split.settled = true;
      const residual = Math.max(0, total - totals.reduce<number>((a, t) => a + (t ?? 0), 0));
      if (residual > 0 && split.dimension === 'date') undatedGap(plan, node, residual);
      else if (residual > 0) addCover(plan, node, residual);
    } else {
      // Overlapping parts prove nothing by their counts: only what is read tells.
      split.settled = true;
    }
  }
  if (split.verified || !subtreeRead(plan, node)) return;
  split.verified = true;
  if (plan.resource === 'leads' && node.exact) {
    const unexplained = total - node.held - gapsBelow(plan, node);
    if (unexplained > 0 && addCover(plan, node, unexplained)) return;
  }
  settleUp(plan, id);
}

/** Only an unbounded window holds undated results; elsewhere the counts moved while read. */
function undatedGap(plan: PartitionPlan, node: PlanNode, residual: number): void {
  const bounded = Object.values(
    WINDOW_PARAMS[plan.resource as Exclude<ListResource, 'leads'>],
  ).some((param) => node.query[param] !== undefined);
  if (bounded) return;
  plan.gaps.push({
    node: node.id,
    query: node.query,
    reason: 'undated',
    count: residual,
    tried: ['date'],
  });
}

/** Settles every cut above a query whose reading just moved on. */
function settleUp(plan: PartitionPlan, id: number): void {
  for (let at = plan.nodes[id]?.parent ?? null; at !== null; at = plan.nodes[at]?.parent ?? null) {
    settleIfCounted(plan, at);
  }
}

/** The queries right below each query: its parts and its covers. */
function belowOf(plan: PartitionPlan): Map<number, PlanNode[]> {
  const below = new Map<number, PlanNode[]>();
  for (const n of plan.nodes) {
    if (n.parent === null) continue;
    const list = below.get(n.parent) ?? [];
    list.push(n);
    below.set(n.parent, list);
  }
  return below;
}

/** Everything under a query is read: each query below it done, each cut below it verified. */
function subtreeRead(plan: PartitionPlan, node: PlanNode): boolean {
  const below = belowOf(plan);
  const read = (n: PlanNode): boolean =>
    n.status === 'done' ||
    (n.status === 'split' && n.split?.verified === true && (below.get(n.id) ?? []).every(read));
  return (below.get(node.id) ?? []).every(read);
}

/** Results the gaps under a query (its own included) already count as unreachable. */
function gapsBelow(plan: PartitionPlan, node: PlanNode): number {
  const inside = (id: number): boolean => {
    for (let at: number | null = id; at !== null; at = plan.nodes[at]?.parent ?? null) {
      if (at === node.id) return true;
    }
    return false;
  };
  return plan.gaps.filter((g) => inside(g.node)).reduce((a, g) => a + g.count, 0);
}

/**
 * Counts each lead the pass sees for the first time (`fresh`) in every query that holds it,
 * from the root down: equality filters by value, text terms by the lead's domain and words.
 * A lead the service's search also finds through another field is not counted there, so a
 * query's `held` never says it holds more than it does: a cut is never taken for complete
 * when it is not (at worst, a cover reads some of it again).
 */
function creditFresh(plan: PartitionPlan, samples: readonly LeadSample[]): void {
  const root = plan.nodes[0];
  if (!root) return;
  const below = belowOf(plan);
  for (const sample of samples) {
    if (!sample.fresh) continue;
    const stack = [root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      node.held += 1;
      for (const child of below.get(node.id) ?? []) {
        if (holds(child.query, node.query, sample)) stack.push(child);
      }
    }
  }
}

/** Whether a lead is in a query, given it is in its parent's (only the terms added count). */
function holds(
  query: Readonly<Record<string, string>>,
  parent: Readonly<Record<string, string>>,
  s: LeadSample,
): boolean {
  for (const name of ['origin', 'lead_type', 'source'] as const) {
    if (query[name] !== undefined && query[name] !== parent[name] && s[name] !== query[name]) {
      return false;
    }
  }
  if (query.text === undefined || query.text === parent.text) return true;
  const known = new Set((parent.text ?? '').split(' '));
  const words = new Set(Object.values(s.words ?? {}).filter((w): w is string => !!w));
  return query.text
    .split(' ')
    .filter((term) => !known.has(term))
    .every((term) => (term.includes('.') ? s.domain === term : words.has(term)));
}

/**
 * What a cut of `node` missed is read through a cover: the same query again, cut by the next
 * dimension (with every value known by now), or at last read as far as it reaches when that
 * should find at least `minYield` of them a request. Otherwise, or past that, they are a gap.
 * Returns whether a cover was added.
 */
function addCover(plan: PartitionPlan, node: PlanNode, residual: number): boolean {
  const split = node.split;
  if (!split || split.dimension === 'date') return false;
  const total = node.total ?? 0;
  const perPage = node.perPage ?? plan.per;
  const reachable = Math.min(1, plan.reachLimit / Math.max(1, total));
  // Each way on costs requests: the cut by a dimension left (its parts and their pages), or
  // the query's reachable pages. The one that should find the most of what was missed per
  // request goes next, if that is at least minYield.
  const ways = split.next.map((choice, i) => ({
    choice,
    rest: split.next.filter((_, j) => j !== i),
    // Its parts, and the pages of what they hold (what this cut missed is no cost of the next).
    yield:
      (residual * choice.coverage) /
      Math.max(1, choice.values.length + (choice.coverage * total) / perPage),
  }));
  // Of the cuts worth their requests, the one that reaches the most: every cut after it
  // reads the whole query again, so the chain should end soon rather than start cheap.
  const worth = ways.filter((w) => w.yield >= plan.minYield);
  const best =
    worth.sort((a, b) => b.choice.coverage - a.choice.coverage || b.yield - a.yield)[0] ??
    ways.sort((a, b) => b.yield - a.yield)[0];
  const useCut = best !== undefined && best.yield >= plan.minYield;
  // Reading the query as far as it reaches is the last resort: it tries no cut, and what lies
  // past the reach stays a gap.
  const readYield = (residual * reachable) / Math.ceil(Math.min(total, plan.reachLimit) / perPage);
  const tried = [...node.spent, split.dimension];
  const reason = best ? 'residual_skipped' : 'filters_exhausted';
  const again = recut(plan, node, residual);
  if (again && again.yield >= plan.minYield) {
    coverWith(plan, node, (cover) => cutBy(plan, cover, again.choice, split.next));
    return true;
  }
  if (!useCut && readYield < plan.minYield) {
    plan.gaps.push({
      node: node.id,
      query: node.query,
      reason,
      count: residual,
      tried: best ? tried : triedOn(plan, node),
    });
    return false;
  }
  coverWith(plan, node, (coverNode) => {
    if (useCut) cutBy(plan, coverNode, withKnownValues(plan, coverNode, best.choice), best.rest);
    else readReachable(plan, coverNode, reason, Math.round(residual * (1 - reachable)), tried);
  });
  return true;
}

/** Adds a cover of `node` (the same query again) and plans it with `plan`. */
function coverWith(
  plan: PartitionPlan,
  node: PlanNode,
  planCover: (cover: PlanNode) => void,
): void {
  const dimension = node.split?.dimension;
  const spent =
    dimension === undefined || dimension === 'date' ? node.spent : [...node.spent, dimension];
  const coverId = plan.nodes.length;
  const coverNode: PlanNode = {
    ...newNode(coverId, node.id, node.query, spent),
    total: node.total,
    perPage: node.perPage ?? plan.per,
    // The same query: it holds what `node` holds, counted so far.
    held: node.held,
    exact: node.exact,
  };
  plan.nodes.push(coverNode);
  planCover(coverNode);
  if (coverNode.status === 'split') settleIfCounted(plan, coverId);
}

/**
 * The cut of `node` made again by its own text term, with the values known now that are no
 * part of it yet (recutChoice), priced like the other ways on: leads it should find of the
 * residual per request.
 */
function recut(
  plan: PartitionPlan,
  node: PlanNode,
  residual: number,
): { choice: Choice; yield: number } | null {
  const split = node.split;
  if (!split || !isTextTerm(split.dimension as LeadDimension)) return null;
  // Every value this query was cut by already: its own cut's and those of the covers above
  // it that repeat its query.
  const taken = new Set<string>();
  const known = new Set((node.query.text ?? '').split(' '));
  const same = JSON.stringify(node.query);
  for (
    let at: PlanNode | undefined = node;
    at && JSON.stringify(at.query) === same;
    at = at.parent === null ? undefined : plan.nodes[at.parent]
  ) {
    if (at.split?.dimension !== split.dimension) continue;
    for (const id of at.split.children) {
      const terms = (plan.nodes[id]?.query.text ?? '').split(' ').filter((t) => !known.has(t));
      for (const t of terms) taken.add(t);
    }
  }
  const perPage = node.perPage ?? plan.per;
  const choice = recutChoice(split.dimension as LeadDimension, taken, plan.discovered, {
    total: node.total ?? 0,
    per: perPage,
    reach: plan.reachLimit,
  });
  if (!choice) return null;
  return {
    choice: { ...choice, missing: 0 },
    yield: Math.min(residual, choice.found) / Math.max(1, choice.cost ?? choice.values.length),
  };
}

/** A later cut of a query takes the values of its dimension read since it was planned. */
function withKnownValues(plan: PartitionPlan, node: PlanNode, choice: Choice): Choice {
  if (!isWord(choice.dimension)) return choice;
  const [now] = rankDimensions(
    LEAD_DIMENSIONS.filter((d) => d !== choice.dimension),
    [],
    plan.discovered,
    { total: node.total ?? 0, per: node.perPage ?? plan.per, reach: plan.reachLimit },
  );
  return now
    ? { ...choice, values: [...new Set([...choice.values, ...now.values])].sort() }
    : choice;
}

/** A cover repeats its parent's query to reach what the parent's cut missed. */
function isCover(plan: PartitionPlan, node: PlanNode): boolean {
  const parent = node.parent === null ? undefined : plan.nodes[node.parent];
  return parent !== undefined && parent.split?.children.includes(node.id) !== true;
}

/**
 * Completes a plan that has read nothing yet without reading: every result of its list
 * (`total` by the service's count) came another way. The lead-booking list, when every lead's
 * bookings came sideloaded with the leads.
 */
export function completeUnread(plan: PartitionPlan, total: number): void {
  const root = plan.nodes[0];
  if (!root || root.status !== 'new') return;
  Object.assign(root, { status: 'done', total, perPage: plan.per, pages: 0 });
}

/** Every query read or cut, and every cut settled. */
export function planComplete(plan: PartitionPlan): boolean {
  return plan.nodes.every(
    (n) => n.status === 'done' || (n.status === 'split' && n.split?.settled === true),
  );
}

export interface PlanReport {
  resource: ListResource;
  complete: boolean;
  /** total_count of the whole read (the root query); null before its first page. */
  totalCount: number | null;
  requests: number;
  /**
   * The requests the plan's cuts allow at least: what a pass that knew every count
   * beforehand and cut the same way would make (the root's first page, then each query read
   * for good, its reachable pages once; no probe, no page asked twice).
   */
  floor: number;
  itemsRead: number;
  queries: number;
  gaps: PlanGap[];
}

function planFloor(plan: PartitionPlan): number {
  const root = plan.nodes[0];
  let floor = root?.status === 'done' ? 0 : 1;
  for (const node of plan.nodes) {
    if (node.status !== 'done' && node.status !== 'reading') continue;
    const perPage = node.perPage ?? plan.per;
    floor += Math.ceil(Math.min(node.total ?? 0, plan.reachLimit) / perPage) || 1;
  }
  return floor;
}

export function planReport(plan: PartitionPlan): PlanReport {
  return {
    resource: plan.resource,
    complete: planComplete(plan),
    totalCount: plan.nodes[0]?.total ?? null,
    requests: plan.requests,
    floor: planFloor(plan),
    itemsRead: plan.itemsRead,
    queries: plan.nodes.length,
    gaps: plan.gaps,
  };
}

/** A result's date for the window cuts (the start of the booking or appointment). */
export function sampleDate(attributes: Readonly<Record<string, unknown>>): string | null {
  const startsAt = attributes.starts_at;
  return typeof startsAt === 'string' ? dateOf(startsAt) : null;
}
