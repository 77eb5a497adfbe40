import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { PermissionError } from '../../api/errors.js';
import { DestinationPausedError } from '../../destinations/errors.js';
import type { Resource } from '../../destinations/record.js';
import {
  completeUnread,
  createPlan,
  planComplete,
  planReport,
  rereadMoved,
  type ListResource,
  type PartitionPlan,
} from '../../records/partition-plan.js';
import { gapLines } from '../../records/plan-gaps.js';
import {
  tallyDelta,
  type LearnedReach,
  type MirrorCounts,
  type MirrorSubject,
  type PartitionState,
  type PartitionTally,
} from '../../workflows/mirror-types.js';
import { addTally, emptyTally, loadPartition, savePartition } from './plan-checkpoints.js';
import {
  isRefusal,
  passKeyOf,
  refusalsOf,
  type MirrorTarget,
  type PassTools,
} from './pass-tools.js';
import { eventsNamed, probeIds } from './probe-ids.js';
import { readSlice } from './read-slice.js';
import { heartbeatEvery } from '../heartbeats.js';
import { recountRoot } from './source-pages.js';
import { AGAIN, readRecords } from './records-by-id.js';
import { settledReads } from './sweep-deletions.js';
import { writeRecords } from './write-records.js';

/** What the plan learned of the service's reach, for the workflow, status and the log. */
function learnedReach(resource: ListResource, plan: PartitionPlan): LearnedReach | undefined {
  const learned = plan.learned;
  if (!learned) return undefined;
  return {
    resource,
    configured: learned.configured,
    reach: learned.reach,
    page: learned.page,
    per: learned.per,
    items: learned.items,
    total: learned.total,
  };
}

export interface PageInput extends MirrorTarget {
  generation: number;
  /** The pass's subjects: with the mode, they name the pass whose cursors the store keeps. */
  subjects?: MirrorSubject[];
  /**
   * The partition: its cursor is in the store; `cursor` is one a pass carried from before
   * that (read once, then null), and `tally` the counts the workflow has seen reported.
   */
  partition: Pick<PartitionState, 'key' | 'subject' | 'spec' | 'cursor' | 'tally'>;
  /** Expected records of each finished partition (lead bookings need the leads' total). */
  expectedOf: Record<string, number>;
}

export interface PageOutput {
  /** Always null: the cursor stays in the store. */
  cursor: null;
  done: boolean;
  expected: number;
  /** What this activity (and any attempt whose result was lost) did: tally minus input's. */
  counts: Partial<MirrorCounts>;
  /** The partition's running counts after this activity. */
  tally: PartitionTally;
  gaps: string[];
  /** Set when a page showed the service's reach to be below the configured one. */
  reach?: LearnedReach;
  /** Why the destination refused records of this page (none: absent). */
  refusals?: string[];
  /**
   * The service's words, when it refused the partition's list to the credential before any of
   * it was read (a permission it lacks): the partition is done, unread.
   */
  forbidden?: string;
  /**
   * Counts of other partitions' lists, asked along with this one (the lead bookings' with the
   * first leads): what those partitions will read, before they read it (see countsAlong).
   */
  listed?: Record<string, number>;
}

/**
 * Lead bookings come sideloaded with their leads, and their own list is asked for its count
 * only once the leads are read (mirror-page's lead_bookings branch). Until then a pass
 * measured leads and their bookings against the leads' count alone: `13424 read (10000
 * listed)`, its bar stopped half full and no ETA. So the first activity of the leads asks the
 * booking list's count too, one request beside its pages: the pass knows from its start how
 * much it reads. The booking list's partition still asks again at its end; that count is the
 * one the pass is settled by.
 */
const COUNTED_ALONG: Partial<Record<ListResource, ListResource>> = { leads: 'lead_bookings' };

/** Whether an activity of this partition asks another list's count too (its first). */
const countsAlong = (input: PageInput, resource: ListResource): ListResource | undefined =>
  (input.partition.tally?.requests ?? 0) === 0 ? COUNTED_ALONG[resource] : undefined;

const resourceOf = (input: PageInput): ListResource =>
  (input.partition.spec as { resource: ListResource }).resource;

export function createMirrorPage({
  deps,
  lanes,
  maxLanes,
  learnedLanes,
  pagesPerActivity,
  readByIdMs,
  sliceMs,
  writeBatch,
  open,
  scopeOf,
}: PassTools) {
  /**
   * Advances one partition by up to a few pages (one request each, fetched at once), plus
   * the reads by id those pages call for, and writes what changed.
   *
   * A list the service refuses to the credential from its first request (a 403 naming a
   * permission, as a key made with only `lead_read` meets on appointments) settles the
   * partition unread, so the pass mirrors the subjects it may read and ends incomplete saying
   * which it may not. A refusal after part of the list was read (a permission taken away
   * mid-pass) still fails the pass: what was read must not look like all there is.
   */
  function mirrorPage(input: PageInput): Promise<PageOutput> {
    return advanceOrSettle(input, true);
  }

  async function advanceOrSettle(input: PageInput, recheck: boolean): Promise<PageOutput> {
    try {
      return await advance(input);
    } catch (error) {
      const tally = input.partition.tally ?? emptyTally();
      if (!(error instanceof PermissionError) || tally.pages > 0 || tally.read > 0) throw error;
      // A sync started right after `ebsync connect` gave the connection a key that may: this
      // process may not have seen it yet (it checks at most once a second). Refused with the
      // old credentials, the list is asked for again, once, with the new ones.
      if (recheck && (await deps.credentialsReplaced?.(input.connectionId))) {
        return await advanceOrSettle(input, false);
      }
      log.warn('the service refused a list to the credential; the pass leaves it unread', {
        partition: input.partition.key,
        error: error.message,
      });
      // The refused request, and the count asked along with it (refused too, or not needed).
      const requests = countsAlong(input, resourceOf(input)) ? 2 : 1;
      return {
        cursor: null,
        done: true,
        expected: 0,
        counts: { requests },
        tally: { ...tally, requests: tally.requests + requests },
        gaps: [],
        forbidden: error.message,
      };
    }
  }

  async function advance(input: PageInput): Promise<PageOutput> {
    const resource = resourceOf(input);
    const [at, client] = await Promise.all([
      open(input),
      deps.clientFor(input.connectionId, input.credentialsVersion),
    ]);
    const key = passKeyOf(at, input.subjects ?? [input.partition.subject], input.mode);
    const saved = await loadPartition(at.ledger, key, input.generation, input.partition.key, {
      carried: input.partition.cursor,
      plan: () =>
        createPlan(resource, {
          per: deps.per,
          reachLimit: deps.reachLimit,
          ...(deps.minYield !== undefined ? { minYield: deps.minYield } : {}),
        }),
    });
    const { plan } = saved;
    const learnedBefore = plan.learned?.reach;
    const ctx = Context.current();
    // A slice of the partition per activity: its pages asked for while earlier ones are
    // written (read-slice.ts). A failed request ends the slice with what arrived (kept in
    // the cursor), so a retry asks only for what is missing; one failed request in a few
    // dozen must not cost the whole activity, or a flaky service is never read through.
    /**
     * Fails the activity with `error`, its requests (the one turned away among them) kept with
     * the cursor first: they count in the pass's all the same, the next activity reports them
     * with its own. Not kept if the store fails too: the failure said is the service's, and
     * the retry meets the store's itself.
     */
    const failKeepingCount = async (error: unknown): Promise<never> => {
      await savePartition(at.ledger, key, input.generation, input.partition.key, saved).catch(
        () => undefined,
      );
      throw error;
    };
    /**
     * The cursor and counts saved as they stand, after rows were written outside a slice (read
     * by id, probed): a retry finds those records seen and reads them no more, so their counts
     * must be kept with them, or a worker killed before the activity's end leaves them in none.
     */
    const keep = (): Promise<void> =>
      savePartition(at.ledger, key, input.generation, input.partition.key, saved);
    /** The list's count asked again: one request, counted whether or not it is answered. */
    const recount = async (): Promise<number> => {
      saved.tally.requests += 1;
      return recountRoot(client, plan).catch(failKeepingCount);
    };
    const byIdRefusals: string[] = [];
    /**
     * Records of the ledger read by id, those still there written as any read is (counted as
     * reached by this pass), their requests counted whether or not they are answered. Returns
     * the destination's refusals. With `settle`, a failed read fails the activity once what was
     * read is kept: those not read would be called unreachable, and the retry reads only them.
     */
    const readKnown = async (
      of: Resource,
      ids: readonly string[],
      settle: boolean,
    ): Promise<string[]> => {
      const got = await readRecords(client, of, ids, {
        concurrency: lanes,
        keepGoing: true,
        ...(settle ? { again: AGAIN } : {}),
      });
      saved.tally.requests += got.requests;
      let settled;
      try {
        settled = settledReads(ids, got);
      } catch (error) {
        return failKeepingCount(error);
      }
      let { found } = settled;
      if (of === 'event_bookings') {
        const events = await eventsNamed(
          at,
          scopeOf(at, of),
          client,
          input.generation,
          lanes,
          found,
        );
        saved.tally.requests += events.requests;
        if (events.failure) return failKeepingCount(events.failure);
        found = [...events.records, ...found];
      }
      const written = await writeRecords(at, input.generation, found);
      addTally(saved.tally, {
        pages: 0,
        requests: 0,
        read: found.length,
        written: written.written,
        unchanged: written.unchanged,
        again: written.again,
        refused: written.refused,
        passedOver: written.passedOver,
        withoutEmail: written.withoutEmail,
      });
      const [failed] = settled.failed;
      if (settle && failed) return failKeepingCount(failed.error);
      return written.refusals;
    };
    if (resource === 'lead_bookings' && plan.requests === 0) {
      // Every lead's bookings come with its page of leads: when the leads were all read, the
      // booking list holds nothing the pass lacks, and one request for its count shows it.
      const total = await recount();
      const scope = scopeOf(at, 'lead_bookings');
      let seen = await at.ledger.countSeen(scope, input.generation);
      if (seen < total) {
        // A deleted lead's bookings may stay listed (the spec says nothing of them): no page of
        // leads brings them. When the ledger's bookings this pass has not seen are fewer than
        // the list's pages, they are read by id instead; the list is skipped only if those
        // still there make up the whole count, so nothing listed can be missed.
        const pages = Math.ceil(total / plan.per);
        const unseen = await at.ledger.listUnseen(scope, input.generation, { limit: pages });
        if (unseen.length > 0 && unseen.length < pages) {
          // Unsettled: any not read here, the list below reads.
          byIdRefusals.push(
            ...(await readKnown(
              'lead_bookings',
              unseen.map((e) => e.id),
              false,
            )),
          );
          seen = await at.ledger.countSeen(scope, input.generation);
        }
      }
      if (seen >= total) completeUnread(plan, total);
      await keep();
    }
    const startedWithWork = !planComplete(plan);
    const along = countsAlong(input, resource);
    // Only the progress waits on this count: a failure leaves it unknown until that list is read.
    const alongCount = along
      ? recountRoot(
          client,
          createPlan(along, { per: deps.per, reachLimit: deps.reachLimit }),
        ).catch(() => undefined)
      : undefined;
    // What the slice writes is counted in the store batch by batch, with the cursor as it
    // stands before the slice: a worker that dies mid-slice leaves the rows it wrote counted,
    // and the retry, which reads those pages again, counts them as read again. Counted only
    // at the slice's end, they were in no count at all (the summary's written fell short of
    // the rows by a slice's worth, the pass done, exit 0).
    const before = { plan: structuredClone(plan), tally: { ...saved.tally } };
    let progressSaved: Promise<void> = Promise.resolve();
    /** The partition's counts as last saved by onWritten. */
    let savedTally: PartitionTally = saved.tally;
    const onWritten = (batch: PartitionTally, requests: number): Promise<void> => {
      addTally(before.tally, { ...batch, requests: 0 });
      const tally = { ...before.tally, requests: before.tally.requests + requests };
      savedTally = tally;
      progressSaved = progressSaved.then(() =>
        savePartition(at.ledger, key, input.generation, input.partition.key, saved, {
          plan: before.plan,
          tally,
        }),
      );
      return progressSaved;
    };
    const slice = await readSlice(
      plan,
      client,
      { ...at, generation: input.generation, mode: input.mode },
      {
        onWritten,
        lanes,
        startLanes: learnedLanes.get(input.connectionId),
        maxLanes,
        budget: pagesPerActivity,
        readByIdMs,
        sliceMs,
        ...(writeBatch !== undefined ? { writeBatch } : {}),
        onProgress: heartbeatEvery(ctx),
        onLanes: (inFlight) => {
          const before = learnedLanes.get(input.connectionId) ?? lanes;
          learnedLanes.set(input.connectionId, inFlight);
          if (inFlight > before) {
            ctx.log.info('more pages in flight: the service answers slower than they are handled', {
              pagesInFlight: inFlight,
            });
          }
        },
      },
    ).catch(async (error: unknown) => {
      if (!(error instanceof DestinationPausedError)) throw error;
      // The pass stops paused: what this activity wrote before (saved with the partition)
      // goes to the workflow with the pause, or the pass would end counting none of it.
      await progressSaved.catch(() => undefined);
      throw ApplicationFailure.create({
        type: error.name,
        message: error.message,
        nonRetryable: true,
        details: [
          { resumeAt: error.resumeAt, passCounts: tallyDelta(savedTally, input.partition.tally) },
        ],
      });
    });
    if (startedWithWork && slice.requests === 0) {
      throw ApplicationFailure.create({
        type: 'PlanStuck',
        message: `${resource}: the partition plan has nothing left to read but is not complete`,
        nonRetryable: true,
      });
    }
    const listedAlong = await alongCount;
    if (along) slice.requests += 1;
    const tally = saved.tally;
    addTally(tally, slice);
    // A refusal fails the pass; nothing read in this activity at all fails it, so that the
    // retry policy (or Retry-After) spaces the next try. Otherwise keep what was read and hand
    // the cursor back.
    const [failure] = slice.failures;
    const ending =
      slice.failures.find(isRefusal) ??
      (failure && slice.pages === 0 && slice.read === 0 ? failure : undefined);
    if (ending !== undefined) return failKeepingCount(ending);
    const refusals = [...byIdRefusals, ...slice.refusals];
    let done = planComplete(plan);
    let expected = planReport(plan).totalCount ?? 0;
    let unreachable = 0;
    const gaps: string[] = [];
    if (done) {
      // The slice's cursor with its counts, before the reads by id and probes below write
      // more (an activity that is not done saves them once, at its end).
      await keep();
      // Exact: what the service counts minus the distinct records this pass reached.
      const reached = (r: Resource) => at.ledger.countSeen(scopeOf(at, r), input.generation);
      let missing = Math.max(0, expected - (await reached(resource)));
      if (rereadMoved(plan) > 0) {
        // Some query's count moved while it was read: a record may have slipped between its
        // pages onto one read already. Those queries are read again, whatever the counts say:
        // records deleted meanwhile were reached too, so a pass can count as many records as
        // the service does and still have skipped live ones.
        done = false;
      } else if (missing > 0) {
        // Records deleted since the list was first counted are no gap: count it again.
        const now = await recount();
        if (now < expected) {
          expected = now;
          missing = Math.max(0, expected - (await reached(resource)));
        }
      }
      if (done && resource !== 'leads' && missing > 0) {
        // The list holds records it cannot reach (a day over the reach). Those the ledger
        // holds and this pass has not seen may be the very ones (written by a webhook, or by a
        // pass when the reach was larger): when they are few, each is read by id, and those
        // still there are reached after all. Many unseen ones say nothing of which are missing.
        const limit = Math.max(missing, lanes * 8);
        const unseen = await at.ledger.listUnseen(scopeOf(at, resource), input.generation, {
          limit: limit + 1,
        });
        if (unseen.length > 0 && unseen.length <= limit) {
          refusals.push(
            ...(await readKnown(
              resource,
              unseen.map((e) => e.id),
              true,
            )),
          );
          await keep();
          missing = Math.max(0, expected - (await reached(resource)));
        }
      }
      const lacking = missing > 0;
      if (done && resource !== 'leads' && resource !== 'lead_bookings' && missing > 0) {
        // Records on a day over the reach are in no list's reach, but their ids are whole
        // numbers: those the pass did not see are read by id (probe-ids.ts).
        const probed = await probeIds(
          at,
          scopeOf(at, resource),
          client,
          resource,
          input.generation,
          lanes,
          missing,
        );
        addTally(tally, probed.tally);
        refusals.push(...probed.refusals);
        if (probed.failure) return failKeepingCount(probed.failure);
        await keep();
        missing = Math.max(0, expected - (await reached(resource)));
      }
      if (done && resource === 'event_bookings' && lacking) {
        // Events come only by the ids their bookings name: those of unreachable bookings are
        // looked for among the event ids the pass did not see.
        const probed = await probeIds(
          at,
          scopeOf(at, 'events'),
          client,
          'events',
          input.generation,
          lanes,
        );
        addTally(tally, probed.tally);
        refusals.push(...probed.refusals);
        if (probed.failure) return failKeepingCount(probed.failure);
        await keep();
      }
      // The leads' own count and gaps are settled with their bookings' (some leads come by
      // id), by finishMirrorPass.
      if (done && resource !== 'leads') {
        unreachable += missing;
        gaps.push(...gapLines(resource, plan.gaps, missing, expected));
      }
      if (done && resource === 'lead_bookings') {
        unreachable += Math.max(0, (input.expectedOf.leads ?? 0) - (await reached('leads')));
      }
    }
    await savePartition(at.ledger, key, input.generation, input.partition.key, saved);
    const reach = learnedReach(resource, plan);
    if (reach && reach.reach !== learnedBefore) {
      log.warn(
        'a page showed the service reach below the configured one; parts over it are cut again',
        {
          ...reach,
        },
      );
    }
    return {
      cursor: null,
      done,
      expected,
      counts: { ...tallyDelta(tally, input.partition.tally), unreachable },
      tally,
      gaps,
      ...(reach ? { reach } : {}),
      ...refusalsOf(refusals),
      ...(along && listedAlong !== undefined ? { listed: { [along]: listedAlong } } : {}),
    };
  }
  return mirrorPage;
}
