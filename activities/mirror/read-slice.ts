import type { Client as ServiceClient } from '../../api/client.js';
import type { Resource } from '../../destinations/record.js';
import type { MirrorMode, PartitionTally } from '../../workflows/mirror-types.js';
import type { CanonicalRecord } from '../../records/canonical.js';
import {
  applyPage,
  markFresh,
  planComplete,
  readySteps,
  stepKey,
  type ListResource,
  type PageStep,
  type PartitionPlan,
} from '../../records/partition-plan.js';
import { LaneSizer } from './lane-sizing.js';
import { emptyTally } from './plan-checkpoints.js';
import { readRecords, type ManyRead } from './records-by-id.js';
import { asError, fetchPage, type FetchedPage } from './source-pages.js';
import { batchWriter } from './batch-writer.js';
import {
  WritePausedError,
  writeRecords,
  type WriteCounts,
  type WriteTarget,
} from './write-records.js';

/**
 * One slice of a partition's read, as a pipeline: pages are asked for while earlier ones are
 * applied to the plan and their records written, so the service, this process and the
 * destination work at once. Up to `lanes` pages are in flight; the records of kept pages are
 * written in batches by one writer, in the order they were kept; the slice ends after
 * `budget` pages, or when a request fails (what arrived is written and kept), or when the plan
 * is complete. The plan's cursor moves only past pages whose records are written.
 */

export interface SliceTarget extends WriteTarget {
  destinationId: string;
  generation: number;
  mode: MirrorMode;
}

export interface SliceCounts extends PartitionTally {
  refusals: string[];
}

export interface SliceOutcome extends SliceCounts {
  /** Failures of requests: the slice ended early on the first one, keeping what arrived. */
  failures: Error[];
}

export interface SliceOptions {
  /** Pages in flight at the least (lane-sizing.ts). */
  lanes: number;
  /** Pages in flight at the start, kept within the bounds (default: the least). */
  startLanes?: number | undefined;
  /** Pages in flight at most, when the service answers slower than pages are handled. */
  maxLanes?: number;
  /** Told when the pages in flight change, with the new number. */
  onLanes?: (lanes: number) => void;
  /**
   * Pages this slice starts at most, at the least lanes in flight; in proportion to the lanes
   * when there are more, so a slice still spans a few round trips rather than one.
   */
  budget: number;
  /** Records written together (one batch per resource through the write path). */
  writeBatch?: number;
  /**
   * After this long the slice asks for no more records by id, and starts no page that would
   * need them; a page whose records were not all read is asked for again by the next slice,
   * which reads only the records this one did not (absent: no limit).
   */
  readByIdMs?: number;
  /**
   * After this long the slice starts no more pages; those in flight are written and kept. A
   * pass's progress moves when a slice returns, so against a slow service a slice of many
   * pages left it standing while thousands of rows were written (absent: no limit).
   */
  sliceMs?: number;
  /** Called as work moves (heartbeats). */
  onProgress?: () => void;
  /**
   * Told, one batch after another in the order they were written, what each write did (its
   * records counted read, and how each was written), and the requests the slice has made so
   * far. The batch's write waits for it: a failure fails the slice as a failed write does.
   */
  onWritten?: (batch: PartitionTally, requests: number) => Promise<void>;
}

/** The records a page of bookings names that are read by id: leads, or events. */
const BY_ID: Partial<Record<ListResource, { target: Resource; attribute: string }>> = {
  lead_bookings: { target: 'leads', attribute: 'lead_id' },
  event_bookings: { target: 'events', attribute: 'event_id' },
};

/** A fetched page, with what it named read by id (or why not). */
interface Arrived {
  step: PageStep;
  page: FetchedPage;
  /** Records read by id for it. */
  byId: CanonicalRecord[];
  requests: number;
  /** Whether every record it named has an answer (a record, or the service's 404). */
  whole: boolean;
  failures: Error[];
}

/** The distinct ids the records name by `attribute` (or its relationship). */
export const idsOf = (records: readonly CanonicalRecord[], attribute: string): string[] => [
  ...new Set(
    records
      .map((r) => r.attributes[attribute] ?? r.relationships[attribute.replace(/_id$/, '')])
      .filter((v): v is string | number => typeof v === 'string' || typeof v === 'number')
      .map(String),
  ),
];

export async function readSlice(
  plan: PartitionPlan,
  client: ServiceClient,
  at: SliceTarget,
  options: SliceOptions,
): Promise<SliceOutcome> {
  const resource = plan.resource;
  const scope = (r: Resource) => ({
    connectionId: at.connectionId,
    destination: at.destinationId,
    resource: r,
  });
  const counts: SliceOutcome = { ...emptyTally(), refusals: [], failures: [] };
  const writeBatch = Math.max(1, options.writeBatch ?? 500);
  const readByIdUntil =
    options.readByIdMs === undefined ? undefined : Date.now() + options.readByIdMs;
  const pastReadById = () => readByIdUntil !== undefined && Date.now() >= readByIdUntil;
  const sliceUntil = options.sliceMs === undefined ? undefined : Date.now() + options.sliceMs;
  const pastSlice = () => sliceUntil !== undefined && Date.now() >= sliceUntil;
  // Reads by id of this slice, shared by pages naming the same record.
  const askedById = new Map<string, Promise<ManyRead>>();
  // Leads counted as first seen in this slice (the ledger knows those of earlier slices).
  const credited = new Set<string>();
  // Read by id and not there, in this pass: never asked again (the plan keeps them).
  const missing = new Set(plan.missingById);

  /** Ids of `r` the ledger has not seen in this pass. */
  const notSeen = async (r: Resource, ids: readonly string[]): Promise<Set<string>> => {
    if (ids.length === 0) return new Set();
    const known = new Map(
      (await at.ledger.get(scope(r), ids)).map((e) => [e.id, e.generation] as const),
    );
    return new Set(ids.filter((id) => (known.get(id) ?? -1) < at.generation));
  };

  /** The ids a page of bookings names that this pass still has to read by id. */
  const toReadById = async (page: FetchedPage): Promise<string[]> => {
    const named = BY_ID[resource];
    if (!named) return [];
    const bookings = page.records.filter((r) => r.resource === resource);
    let wanted = idsOf(bookings, named.attribute);
    if (resource === 'event_bookings' && at.mode === 'incremental') {
      // Only the events whose bookings are new or changed, and those never mirrored.
      const verdicts = await at.ledger.classify(
        scope('event_bookings'),
        bookings.map((b) => ({ id: b.id, hash: b.hash })),
      );
      const moved = new Set(
        idsOf(
          bookings.filter((_, i) => verdicts[i]?.state !== 'unchanged'),
          'event_id',
        ),
      );
      const known = new Set((await at.ledger.get(scope('events'), wanted)).map((e) => e.id));
      wanted = wanted.filter((id) => moved.has(id) || !known.has(id));
    }
    return [...(await notSeen(named.target, wanted))].filter((id) => !missing.has(id));
  };

  const arrive = async (step: PageStep): Promise<Arrived> => {
    const page = await fetchPage(client, plan, step);
    const arrived: Arrived = { step, page, byId: [], requests: 1, whole: true, failures: [] };
    const named = BY_ID[resource];
    if (!named) return arrived;
    const ids = await toReadById(page);
    const fresh = ids.filter((id) => !askedById.has(id));
    if (fresh.length > 0) {
      // The records a page points to (events of event bookings) may be many, read at a
      // slowed pace: each answer is progress, or the activity would miss its heartbeats.
      const reading = readRecords(client, named.target, fresh, {
        concurrency: 4,
        keepGoing: true,
        ...(options.onProgress ? { onAnswer: options.onProgress } : {}),
        ...(readByIdUntil !== undefined ? { until: readByIdUntil } : {}),
      });
      for (const id of fresh) askedById.set(id, reading);
      const got = await reading;
      for (const id of got.missing) {
        if (missing.has(id)) continue;
        missing.add(id);
        plan.missingById.push(id);
      }
      arrived.requests += got.requests;
      arrived.byId.push(...got.reads.flatMap((r) => [r.record, ...r.included]));
    }
    const answers = await Promise.all(
      ids.map((id) => askedById.get(id) ?? Promise.resolve(undefined)),
    );
    for (const [i, id] of ids.entries()) {
      const got = answers[i];
      const answered =
        got !== undefined &&
        (got.missing.includes(id) || got.reads.some((r) => r.record.id === id));
      if (!answered) {
        // A page counts as read only with every record it named: otherwise it is asked for
        // again (its bookings too, so an incremental pass still sees them as changed).
        arrived.whole = false;
        const failure = got?.failed.find((f) => f.id === id);
        if (failure) arrived.failures.push(asError(failure.error));
      }
    }
    return arrived;
  };

  const lanes = new LaneSizer({
    start: options.startLanes ?? options.lanes,
    min: options.lanes,
    max: options.maxLanes ?? options.lanes,
  });
  // The writer: batches started in the order pages were kept, as many at once as the
  // destination takes (batch-writer.ts).
  let pending: CanonicalRecord[] = [];
  const add = (more: WriteCounts) => {
    counts.written += more.written;
    counts.unchanged += more.unchanged;
    counts.again += more.again;
    counts.refused += more.refused;
    counts.passedOver += more.passedOver;
    counts.withoutEmail += more.withoutEmail;
    for (const line of more.refusals) if (counts.refusals.length < 20) counts.refusals.push(line);
  };
  // The lanes are told how long some batch was being written, not the sum of the batches'
  // times: two at once would otherwise count as a writer busy twice over.
  let writingNow = 0;
  let lastChange = 0;
  const writingChanges = (by: number): void => {
    const now = performance.now();
    if (writingNow > 0) lanes.wrote(now - lastChange);
    lastChange = now;
    writingNow += by;
  };
  const writer = batchWriter<CanonicalRecord>({
    writers: at.destination.capabilities.concurrentBatches ?? 1,
    keyOf: (record) => `${record.resource}/${record.id}`,
    write: async (batch) => {
      writingChanges(1);
      let done: WriteCounts;
      let paused: WritePausedError | undefined;
      try {
        done = await writeRecords(at, at.generation, batch);
      } catch (error) {
        // What was written before a destination's pause is counted (and kept) all the same;
        // the batch's other records count as not read, and the slice fails with the pause.
        if (!(error instanceof WritePausedError)) throw error;
        paused = error;
        done = error.counts;
      } finally {
        writingChanges(-1);
      }
      add(done);
      await options.onWritten?.(
        {
          ...emptyTally(),
          read: paused
            ? done.written + done.unchanged + done.again + done.refused + done.passedOver
            : batch.length,
          written: done.written,
          unchanged: done.unchanged,
          again: done.again,
          refused: done.refused,
          passedOver: done.passedOver,
          withoutEmail: done.withoutEmail,
        },
        counts.requests,
      );
      if (paused) throw paused;
      options.onProgress?.();
    },
  });
  const flush = (): void => {
    writer.add(pending);
    pending = [];
  };

  const inFlight = new Map<
    string,
    Promise<{ key: string; result: PromiseSettledResult<Arrived> }>
  >();
  let started = 0;
  let stopped = false;
  const fill = (): void => {
    if (stopped) return;
    // A page started now would find no time left to read the records it names.
    if (started > 0 && BY_ID[resource] && pastReadById()) return;
    if (started > 0 && pastSlice()) return;
    const byBudget = Math.ceil((options.budget * lanes.lanes) / options.lanes) - started;
    if (byBudget <= 0) return;
    const byLanes = Math.max(0, lanes.lanes - inFlight.size);
    const room = Math.min(byLanes, byBudget);
    // One step more than there is room for tells whether the lanes (not the budget) held
    // pages back.
    const ready = readySteps(plan, { max: room + 1, skip: new Set(inFlight.keys()) });
    if (ready.length > room && byLanes < byBudget) lanes.heldBack();
    for (const step of ready.slice(0, room)) {
      const key = stepKey(step);
      started += 1;
      inFlight.set(
        key,
        arrive(step).then(
          (value) => ({ key, result: { status: 'fulfilled', value } as const }),
          (reason: unknown) => ({ key, result: { status: 'rejected', reason } as const }),
        ),
      );
    }
  };

  fill();
  while (inFlight.size > 0) {
    const { key, result } = await Promise.race(inFlight.values());
    inFlight.delete(key);
    options.onProgress?.();
    const resized = lanes.arrived();
    if (resized !== undefined) options.onLanes?.(resized);
    if (result.status === 'rejected') {
      counts.requests += 1;
      counts.failures.push(asError(result.reason));
      // Ask for nothing more; what is on its way is still kept.
      stopped = true;
      continue;
    }
    const arrived = result.value;
    counts.requests += arrived.requests;
    counts.failures.push(...arrived.failures);
    if (arrived.failures.length > 0) stopped = true;
    // Records read by id are real wherever their page went: written either way.
    pending.push(...arrived.byId);
    counts.read += arrived.byId.length;
    if (arrived.whole) {
      const { step, page } = arrived;
      if (resource === 'leads') {
        const ids = page.summary.ids ?? [];
        const unseen = await notSeen(
          'leads',
          ids.filter((id) => !credited.has(id)),
        );
        markFresh(page.summary, (id) => unseen.has(id) && !credited.has(id));
      }
      counts.pages += 1;
      // A probe's records (a query then cut) come again with its parts: written there.
      if (applyPage(plan, step, page.summary)) {
        for (const id of page.summary.ids ?? []) credited.add(id);
        pending.push(...page.records, ...page.included);
        // Sideloaded records count as read: a full pass of leads reads its lead bookings so,
        // and its progress (read of expected) adds up only when they are counted.
        counts.read += page.records.length + page.included.length;
      }
    }
    if (pending.length >= writeBatch) flush();
    if (planComplete(plan)) stopped = true;
    fill();
  }
  flush();
  try {
    await writer.written();
  } catch (error) {
    throw asError(error);
  }
  return counts;
}
