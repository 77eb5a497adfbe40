import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { createMirrorActivities } from '../activities/mirror/pass.js';
import {
  addCounts,
  keepRefusals,
  emptyCounts,
  emptyProbe,
  etaOf,
  forbiddenLines,
  isIncomplete,
  mirrorProgressQuery,
  type MirrorCarried,
  type MirrorInput,
  type MirrorProgress,
  type MirrorSummary,
  type PartitionState,
} from './mirror-types.js';
import { destinationPause } from './destination-pause.js';
import { rateLimitedSignal } from './rate-limit-types.js';
import { Pace } from './rate-limit.js';
import { ALIVE_HEARTBEAT_TIMEOUT } from './heartbeat-timeout.js';

type MirrorActivities = ReturnType<typeof createMirrorActivities>;

// Errors the service answers that no retry can fix fail the activity at once (activities/
// failures.ts marks them non-retryable); everything else retries with backoff, and 429s
// after what Retry-After said.
const retry = { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 };
const { planMirrorPass, finishMirrorPass } = proxyActivities<MirrorActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: ALIVE_HEARTBEAT_TIMEOUT,
  retry,
});
/** Activities that call the service carry the connection's fairness key and pace. */
const serviceCalls = (pace: Pace) =>
  proxyActivities<MirrorActivities>({
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: ALIVE_HEARTBEAT_TIMEOUT,
    retry,
    priority: pace.priority(Date.now()),
  });

/** Pages per run before the history is handed to a fresh run (continue-as-new). */
const PAGES_PER_RUN = 400;
const HISTORY_BYTES = 4 * 1024 * 1024;

/**
 * Mirrors one connection's records into one destination. Only partitions, cursors and counts
 * live here (DESIGN decision 1): each page is read, normalized, compared with the ledger and
 * written by one activity. Deletions happen only after every partition was read to its end.
 */
export async function mirrorWorkflow(input: MirrorInput): Promise<MirrorSummary> {
  const concurrency = Math.max(1, Math.min(16, input.concurrency ?? 4));
  let state: MirrorCarried | undefined = input.carried;
  let error: string | null = null;
  let pausedUntil: string | undefined;
  const now = (): number => Date.now();
  /** Pauses whose counts the pass took in (a lane's pause is also the error that ends it). */
  const pausesCounted = new Set<unknown>();
  const countPause = (err: unknown): void => {
    const counts = destinationPause(err)?.passCounts;
    if (!state || !counts || pausesCounted.has(err)) return;
    pausesCounted.add(err);
    addCounts(state.counts, counts);
  };

  const progress = (): MirrorProgress => {
    const counts = state?.counts ?? emptyCounts();
    const forbidden = forbiddenLines(state?.partitions ?? []);
    const elapsedMs = state ? Math.max(0, now() - state.startedAt) : 0;
    const ratePerSecond = elapsedMs > 0 ? (counts.read * 1000) / elapsedMs : 0;
    const uncounted = state?.partitions.filter((p) => p.uncounted && !p.done).length ?? 0;
    const etaMs = etaOf(counts, state?.phase === 'done', ratePerSecond, uncounted);
    return {
      connectionId: input.connectionId,
      destination: input.destination,
      mode: input.mode,
      ...(input.rewrite ? { rewrite: true } : {}),
      subjects: input.subjects,
      phase: pausedUntil ? 'paused' : error ? 'failed' : (state?.phase ?? 'planning'),
      passId: state?.passId ?? null,
      generation: state?.generation ?? null,
      startedAt: state?.startedAt ?? null,
      elapsedMs,
      partitions: {
        total: state?.partitions.length ?? 0,
        done: state?.partitions.filter((p) => p.done).length ?? 0,
        uncounted,
        counted:
          state?.partitions.filter((p) => p.done || (!p.uncounted && p.expected > 0)).length ?? 0,
      },
      counts: { ...counts },
      gaps: state?.gaps ?? [],
      refusals: state?.refusals ?? [],
      ...(forbidden.length > 0 ? { forbidden } : {}),
      reach: state?.reach ?? null,
      probe: state?.probe ?? null,
      ratePerSecond: Math.round(ratePerSecond * 10) / 10,
      pace: pace.peek(now()),
      ...(pace.last?.unlimited ? { noRateLimit: true } : {}),
      etaMs,
      error,
      ...(pausedUntil ? { pausedUntil } : {}),
    };
  };
  // Passes started before lone refusals stopped cutting the pace, or before the pace learned
  // the service's ceiling, replay as they ran. A run continued as new goes on at the pace the
  // last one had reached.
  const pace = new Pace(
    input.connectionId,
    {
      cutOnRepeat: patched('pace-cut-on-repeat'),
      learnCeiling: patched('pace-learns-ceiling'),
    },
    input.carried?.pace,
  );
  setHandler(rateLimitedSignal, (signal) => pace.onLimit(signal, now()));
  setHandler(mirrorProgressQuery, progress);

  const target = {
    connectionId: input.connectionId,
    destination: input.destination,
    mode: input.mode,
    ...(input.credentialsVersion !== undefined
      ? { credentialsVersion: input.credentialsVersion }
      : {}),
  };

  try {
    if (!state) {
      const startedAt = now();
      const plan = await planMirrorPass({
        ...target,
        subjects: input.subjects,
        ...(input.rewrite ? { rewrite: true } : {}),
      });
      state = {
        passId: plan.passId,
        generation: plan.generation,
        startedAt,
        partitions: plan.partitions,
        counts: { ...emptyCounts(), ...plan.counts },
        phase: 'reading',
        sweepAfter: null,
        gaps: plan.gaps,
        runs: 0,
      };
    }
    const current = state;
    current.runs += 1;
    let pagesThisRun = 0;
    // Page results carried their partition's plan until cursors moved to the store: passes
    // from then still hand over early when their history grows by bytes.
    const cursorsStored = patched('cursors-in-store');
    const pagesPerRun = Math.max(1, input.pagesPerRun ?? PAGES_PER_RUN);
    const handOver = (): boolean =>
      pagesThisRun >= pagesPerRun ||
      workflowInfo().continueAsNewSuggested ||
      (!cursorsStored && workflowInfo().historySize > HISTORY_BYTES);

    // A destination's pause (a CRM's daily allowance) stops every lane once its page is in:
    // each paused page's writes are counted, and the pass ends paused when all have settled.
    // Passes from before stopped at the first pause, the other pages' results left unread.
    const settlesLanes = current.phase === 'reading' && patched('pause-settles-lanes');
    let pause: ActivityFailure | undefined;
    const pausedLane = (err: unknown): boolean => {
      if (!settlesLanes || !(err instanceof ActivityFailure) || !destinationPause(err))
        return false;
      countPause(err);
      pause ??= err;
      return true;
    };

    if (current.phase === 'reading') {
      // A fixed set of lanes, each taking the next unfinished partition, so at most
      // `concurrency` pages are in flight and a lane never waits on another's partition.
      const taken = new Set<string>();
      // Once the lead list is read, the lead ids it skipped are read by id (probe-ids.ts),
      // before the lead bookings, which then find those leads' bookings already read. Passes
      // from before this step go on without it.
      const leads = current.partitions.find((p) => p.key === 'leads');
      const probing =
        leads !== undefined && (current.probe !== undefined || patched('probe-lead-ids'));
      // Leads the credential may not read are not read by id either.
      const probeSettled = (): boolean =>
        !probing || current.probe?.done === true || leads?.forbidden !== undefined;
      const probeReady = (): boolean => !probeSettled() && leads!.done && !taken.has('probe');
      const isDone = (key: string): boolean =>
        (current.partitions.find((p) => p.key === key)?.done ?? true) &&
        (key !== 'leads' || probeSettled());
      const ready = (): PartitionState | undefined =>
        current.partitions.find(
          (p) => !p.done && !taken.has(p.key) && (p.after === undefined || isDone(p.after)),
        );
      const lane = async (): Promise<void> => {
        for (;;) {
          if (handOver() || pause !== undefined) return;
          // Wait for a partition to become ready (lead bookings wait for leads), or for none
          // to be left to anyone.
          await condition(
            () =>
              handOver() ||
              pause !== undefined ||
              probeReady() ||
              ready() !== undefined ||
              taken.size === 0 ||
              allRead(),
          );
          if (pause !== undefined) return;
          if (probeReady()) {
            taken.add('probe');
            try {
              while (!current.probe?.done && !handOver() && pause === undefined) {
                await probe(leads!);
              }
            } finally {
              taken.delete('probe');
            }
            continue;
          }
          const next = ready();
          if (!next) {
            if (taken.size === 0 || allRead() || handOver()) return;
            continue;
          }
          taken.add(next.key);
          try {
            while (!next.done && !handOver() && pause === undefined) await readPage(next);
          } catch (err) {
            if (!pausedLane(err)) throw err;
          } finally {
            taken.delete(next.key);
          }
        }
      };
      const allRead = (): boolean => current.partitions.every((p) => p.done) && probeSettled();
      const probe = async (partition: PartitionState): Promise<void> => {
        const probed = await serviceCalls(pace).probeLeadIds({
          ...target,
          generation: current.generation,
          expected: partition.expected,
          probe: current.probe ?? emptyProbe(),
        });
        current.probe = probed.probe;
        addCounts(current.counts, probed.counts);
        if (probed.refusals) current.refusals = keepRefusals(current.refusals, probed.refusals);
        pagesThisRun += 1;
      };
      const readPage = async (partition: PartitionState): Promise<void> => {
        const page = await serviceCalls(pace).mirrorPage({
          ...target,
          generation: current.generation,
          subjects: input.subjects,
          partition: {
            key: partition.key,
            subject: partition.subject,
            spec: partition.spec,
            cursor: partition.cursor,
            ...(partition.tally ? { tally: partition.tally } : {}),
          },
          expectedOf: Object.fromEntries(current.partitions.map((p) => [p.key, p.expected])),
        });
        partition.cursor = page.cursor;
        partition.done = page.done;
        partition.expected = page.expected;
        if (page.tally) partition.tally = page.tally;
        if (page.forbidden !== undefined) partition.forbidden = page.forbidden;
        if (page.reach && page.reach.reach < (current.reach?.reach ?? Infinity)) {
          current.reach = page.reach;
        }
        // A list counted along with another (the lead bookings with the first leads) stands at
        // that count until its own partition reads it.
        for (const [key, listed] of Object.entries(page.listed ?? {})) {
          const other = current.partitions.find((p) => p.key === key);
          if (other && !other.done && other.expected === 0) other.expected = listed;
        }
        addCounts(current.counts, page.counts);
        current.counts.expected = current.partitions.reduce((sum, p) => sum + p.expected, 0);
        current.gaps.push(...page.gaps);
        if (page.refusals) current.refusals = keepRefusals(current.refusals, page.refusals);
        pagesThisRun += 1;
      };
      await Promise.all(Array.from({ length: concurrency }, lane));
      if (pause !== undefined) throw pause;
      if (allRead()) {
        current.phase = input.mode === 'full' ? 'deleting' : 'done';
      }
    }

    // A subject with a list its credential may not read is left out of the sweep: its records
    // were not read, so none of them may be called deleted (nor read by id, refused too).
    const refusedSubjects = new Set(
      current.partitions.filter((p) => p.forbidden !== undefined).map((p) => p.subject),
    );
    const swept = input.subjects.filter((subject) => !refusedSubjects.has(subject));
    while (current.phase === 'deleting' && !handOver()) {
      const sweep = await serviceCalls(pace).sweepDeletions({
        ...target,
        subjects: swept,
        generation: current.generation,
        after: current.sweepAfter,
      });
      addCounts(current.counts, sweep.counts);
      if (sweep.refusals) current.refusals = keepRefusals(current.refusals, sweep.refusals);
      current.sweepAfter = sweep.after;
      pagesThisRun += 1;
      if (sweep.done) current.phase = 'done';
    }

    if (current.phase !== 'done') {
      return await continueAsNew<typeof mirrorWorkflow>({
        ...input,
        carried: { ...current, pace: pace.state() },
      });
    }
    // The pages counted what they had not reached as they went; the sweep may have found
    // some of it by id since, so the ledger settles the final count.
    const final = await finishMirrorPass({
      ...target,
      subjects: input.subjects,
      generation: current.generation,
      complete: true,
      expectedOf: Object.fromEntries(current.partitions.map((p) => [p.key, p.expected])),
      ...(current.probe ? { probe: current.probe } : {}),
    });
    current.counts.unreachable = final.unreachable;
    current.gaps.push(...final.gaps);
    // Nothing silent: a pass that left records unreachable or refused is not done.
    if (isIncomplete(current.counts, forbiddenLines(current.partitions), current.refusals)) {
      current.phase = 'incomplete';
    }
    return progress();
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) {
      // An interrupted pass deletes nothing; the ledger is told it did not complete.
      if (state) {
        const generation = state.generation;
        await CancellationScope.nonCancellable(() =>
          finishMirrorPass({ ...target, subjects: input.subjects, generation, complete: false }),
        );
      }
      throw err;
    }
    error =
      err instanceof Error ? (err.cause instanceof Error ? err.cause : err).message : 'failed';
    const paused = destinationPause(err);
    if (paused) {
      pausedUntil = paused.resumeAt;
      countPause(err);
    }
    if (state) {
      await finishMirrorPass({
        ...target,
        subjects: input.subjects,
        generation: state.generation,
        complete: false,
      });
    }
    // A destination out of quota until a reset is not a failure: the pass stops cleanly,
    // says until when, and the next run goes on from what the ledger holds.
    if (pausedUntil) return progress();
    throw ApplicationFailure.create({
      type: 'MirrorPassFailed',
      message: `mirror pass failed: ${error}`,
      nonRetryable: true,
      ...(err instanceof Error ? { cause: err } : {}),
    });
  }
}
