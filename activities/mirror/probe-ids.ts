import { Context } from '@temporalio/activity';
import { heartbeatEvery, progressBeat } from '../heartbeats.js';
import type { IdProbe, MirrorCounts } from '../../workflows/mirror-types.js';
import { isRefusal, refusalsOf, type MirrorTarget, type PassTools } from './pass-tools.js';
import { asError } from './source-pages.js';
import { AGAIN, readRecords } from './records-by-id.js';
import { byIdCounts, settledReads } from './sweep-deletions.js';
import { writeRecords } from './write-records.js';
import type { Client } from '../../api/client.js';
import type { LedgerScope } from '../../store/ledger.js';
import type { PartitionTally } from '../../workflows/mirror-types.js';
import type { OpenTarget } from './pass-tools.js';
import { emptyTally } from './plan-checkpoints.js';
import { idsOf } from './read-slice.js';
import type { CanonicalRecord } from '../../records/canonical.js';

/** Ids the ledger is asked about at once while holes are looked for. */
const WINDOW = 500;
/**
 * Probing goes on while at least this share of its reads find a lead, judged once it made
 * PROBE_JUDGED reads: where lead ids are shared with other businesses (or mostly deleted),
 * the holes are not this business's leads and a read by id finds none.
 */
export const PROBE_MIN_HITS = 0.25;
const PROBE_JUDGED = 100;

/**
 * Ids from `from` up to below `end` that the ledger has not seen in pass `generation` (nor
 * as deleted), at most `budget` of them, and the id a further look goes on from.
 */
async function idHoles(
  at: OpenTarget,
  scope: LedgerScope,
  generation: number,
  from: number,
  end: number,
  budget: number,
): Promise<{ holes: string[]; next: number }> {
  const holes: string[] = [];
  let next = from;
  while (holes.length < budget && next < end) {
    const window = Array.from({ length: Math.min(WINDOW, end - next) }, (_, i) => String(next + i));
    const known = new Set(
      (await at.ledger.get(scope, window))
        .filter((e) => e.deletedAt !== null || e.generation >= generation)
        .map((e) => e.id),
    );
    for (const id of window) {
      if (holes.length >= budget) break;
      next = Number(id) + 1;
      if (!known.has(id)) holes.push(id);
    }
    progressBeat(Context.current());
  }
  return { holes, next };
}

/**
 * Ids read past the highest one a pass saw, a window at a time while each window finds a
 * record: ids only grow, so the newest records have the highest, and where the newest day is
 * more crowded than the reach (a batch imported at once) no list reaches them and no hole
 * lies below them. A window that finds none ends it (past the newest record, or ids that are
 * not this business's).
 */
const beyondWindow = (lanes: number): number => lanes * 8;

/**
 * The events that event bookings read by id name (no list page named them, and an incremental
 * pass reads no other event) and that pass `generation` has not seen: read before the bookings
 * are written, so that after a failure the bookings are still unseen and a retry reads their
 * events again. A refusal throws; another failure is handed back.
 */
export async function eventsNamed(
  at: OpenTarget,
  bookingScope: LedgerScope,
  client: Client,
  generation: number,
  lanes: number,
  bookings: readonly CanonicalRecord[],
): Promise<{ records: CanonicalRecord[]; requests: number; failure?: Error }> {
  const named = idsOf(
    bookings.filter((r) => r.resource === 'event_bookings'),
    'event_id',
  );
  if (named.length === 0) return { records: [], requests: 0 };
  const seen = new Set(
    (await at.ledger.get({ ...bookingScope, resource: 'events' }, named))
      .filter((e) => e.deletedAt !== null || e.generation >= generation)
      .map((e) => e.id),
  );
  const got = await readRecords(
    client,
    'events',
    named.filter((id) => !seen.has(id)),
    {
      concurrency: lanes,
      keepGoing: true,
      again: AGAIN,
      onAnswer: heartbeatEvery(Context.current()),
    },
  );
  const [failed] = got.failed;
  if (failed && isRefusal(failed.error)) throw asError(failed.error);
  return {
    records: got.reads.map((r) => r.record),
    requests: got.requests,
    ...(failed ? { failure: asError(failed.error) } : {}),
  };
}

/**
 * Records a list cannot reach, read by their ids (whole numbers, as every id of the spec).
 * Events are read only by the ids their event bookings name (the spec has no event list), so
 * an event whose every booking is out of reach would be lost uncounted; event bookings and
 * appointments on a day holding more than the reach are in no list's reach. Once such a list
 * is read and lacks records, the ids of `resource` between the lowest and the highest the
 * pass saw, and that it did not see, are read by id (from a window below the lowest), a
 * window at a time, then those past the highest (beyondWindow), until `enough` were found or
 * too few reads find a record (PROBE_MIN_HITS: ids shared with other businesses). What they find is written as every
 * read is. A failed read does not end it: the ids after it are read all the same, and the
 * first failure is handed back, for the activity to fail with once what was read is kept (its
 * retry finds those in the ledger and asks only for the rest); calling the events behind a
 * 503 unreachable would end a pass incomplete that a retry completes.
 */
export async function probeIds(
  at: OpenTarget,
  scope: LedgerScope,
  client: Client,
  resource: 'events' | 'event_bookings' | 'appointments',
  generation: number,
  lanes: number,
  enough = Infinity,
): Promise<{ tally: PartitionTally; refusals: string[]; failure?: Error }> {
  const tally = emptyTally();
  const refusals: string[] = [];
  const range = await at.ledger.seenIdRange(scope, generation);
  if (range === null) return { tally, refusals };
  let probes = 0;
  let hits = 0;
  // A window below the lowest too: a crowded day's list need not return its lowest id first
  // (the sandbox at a reach of 1 returned event booking 2 of a day, never 1).
  let from = Math.max(1, range.min - beyondWindow(lanes));
  let beyond = false;
  let failure: Error | undefined;
  while (hits < enough && (probes < PROBE_JUDGED || hits >= PROBE_MIN_HITS * probes)) {
    if (!beyond && from >= range.max) {
      beyond = true;
      from = range.max + 1;
    }
    const end = beyond ? from + beyondWindow(lanes) : range.max;
    const { holes, next } = await idHoles(at, scope, generation, from, end, lanes * 8);
    if (holes.length === 0) {
      if (beyond) break;
      from = range.max;
      continue;
    }
    // The retry of a failed probe reads every hole again, 404s included (no store records
    // them), so failed reads are asked again here first (`again`).
    const got = await readRecords(client, resource, holes, {
      concurrency: lanes,
      keepGoing: true,
      again: AGAIN,
      onAnswer: heartbeatEvery(Context.current()),
    });
    let settled;
    try {
      settled = settledReads(holes, got);
    } catch (error) {
      if (isRefusal(error)) throw error;
      tally.requests += got.requests;
      failure ??= asError(error);
      break;
    }
    let found = settled.found;
    let requests = got.requests;
    if (resource === 'event_bookings') {
      const events = await eventsNamed(at, scope, client, generation, lanes, found);
      requests += events.requests;
      if (events.failure) {
        tally.requests += requests;
        failure ??= events.failure;
        break;
      }
      found = [...events.records, ...found];
    }
    const written = await writeRecords(at, generation, found);
    const counts = byIdCounts(requests, found, written);
    // Every count the tally keeps, from its own keys: a count added later is not left out.
    for (const k of Object.keys(tally) as (keyof PartitionTally)[]) tally[k] += counts[k] ?? 0;
    refusals.push(...written.refusals);
    probes += settled.answered.length + settled.beyond;
    hits += settled.reads.length;
    const [failed] = settled.failed;
    if (failed) failure ??= asError(failed.error);
    // Past the highest, a window all answered and none a record ends it.
    if (beyond && settled.reads.length === 0 && !failed) break;
    from = next;
  }
  return { tally, refusals, ...(failure ? { failure } : {}) };
}

/**
 * The last way to a lead no filter reaches (DESIGN decision 11: nothing silent, and nothing
 * left that can be had): lead ids are whole numbers (the spec), so the ids between the lowest
 * and the highest that the pass saw, and that it did not see, are read by id, then those past
 * the highest (beyondWindow: the newest leads, crowded out of every list). It stops when the
 * pass has every lead the service counts, when a window past the highest found none, or when
 * too few reads find a lead (PROBE_MIN_HITS). What it finds is written as every read is and
 * counts as reached; what it does not find stays unreachable, and finishMirrorPass reports it.
 */
export function createProbeIds({ deps, lanes, open, scopeOf }: PassTools) {
  async function probeLeadIds(
    input: MirrorTarget & {
      generation: number;
      /** The service's total_count of the lead list. */
      expected: number;
      probe: IdProbe;
    },
  ): Promise<{ probe: IdProbe; counts: Partial<MirrorCounts>; refusals?: string[] }> {
    const probe = { ...input.probe };
    const at = await open(input);
    const scope = scopeOf(at, 'leads');
    const missing = input.expected - (await at.ledger.countSeen(scope, input.generation));
    const range = await at.ledger.seenIdRange(scope, input.generation);
    const judged = probe.probes >= PROBE_JUDGED;
    if (missing <= 0 || range === null || (judged && probe.found < PROBE_MIN_HITS * probe.probes)) {
      return { probe: { ...probe, done: true }, counts: {} };
    }
    // The holes: ids past the cursor the ledger has not seen in this pass (nor as deleted),
    // below the highest it saw while there are any, then past it.
    const budget = Math.min(lanes * 8, missing);
    let from = probe.after === null ? range.min + 1 : probe.after + 1;
    let beyond = from > range.max;
    let { holes, next } = beyond
      ? { holes: [] as string[], next: from }
      : await idHoles(at, scope, input.generation, from, range.max, budget);
    if (holes.length === 0) {
      beyond = true;
      from = Math.max(from, range.max + 1);
      // A whole window is read past the highest, however few are missing: the one missing
      // lead may be a few ids on, past others deleted.
      const window = beyondWindow(lanes);
      ({ holes, next } = await idHoles(at, scope, input.generation, from, from + window, window));
    }
    if (holes.length === 0) return { probe: { ...probe, after: next - 1, done: true }, counts: {} };
    const client = await deps.clientFor(input.connectionId, input.credentialsVersion);
    const got = await readRecords(client, 'leads', holes, {
      concurrency: lanes,
      keepGoing: true,
      onAnswer: heartbeatEvery(Context.current()),
    });
    // The cursor moves only past ids with an answer (the lead, or the service's 404); leads
    // read past a failed id are written all the same, and seen, they are no hole next time.
    // Each id counts once as probed: a 404 past the cursor only when the cursor passes it.
    const settled = settledReads(holes, got);
    const { answered, reads, found } = settled;
    const written = await writeRecords(at, input.generation, found);
    probe.probes += answered.length + settled.beyond;
    probe.found += reads.length;
    const last = answered[answered.length - 1];
    if (last !== undefined) probe.after = Number(last);
    // Past the highest, a window whose every id was answered and none a lead ends it; one with
    // ids unanswered (a failed read) goes on from the last answered.
    probe.done =
      reads.length >= missing || (beyond && reads.length === 0 && answered.length === holes.length);
    return {
      probe,
      counts: byIdCounts(got.requests, found, written),
      ...refusalsOf(written.refusals),
    };
  }
  return probeLeadIds;
}
