import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { createAutomationActivities } from '../activities/automations/forward-change.js';
import type { createDrainActivities } from '../activities/mirror/drain-inbox.js';
import {
  addDrainCounts,
  drainStatusQuery,
  emptyDrainTotals,
  inboxWakeSignal,
  type DrainInput,
  type DrainStatus,
  type DrainTotals,
} from './drain-types.js';
import { destinationPause, waitForResetMs } from './destination-pause.js';
import { FORWARDING } from './forwarding.js';
import { DESTINATION_CLAIMED } from './mirror-types.js';
import { rateLimitedSignal } from './rate-limit-types.js';
import { Pace } from './rate-limit.js';

type DrainActivities = ReturnType<typeof createDrainActivities>;
type AutomationActivities = ReturnType<typeof createAutomationActivities>;

const retry = { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 };

/**
 * A batch reads the service: it carries the connection as fairness key and its pace as weight
 * (DESIGN decision 7), as the mirror's page activities do. Outages and rate limits retry here
 * for as long as they last; the notices wait in the inbox meanwhile.
 */
const batchCalls = (pace: Pace) =>
  proxyActivities<DrainActivities>({
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '1 minute',
    retry,
    priority: pace.priority(Date.now()),
  });

const { forwardChanges, forwardLeftovers } = proxyActivities<AutomationActivities>(FORWARDING);

/** Without a wake-up, the inbox is checked this often. */
const CHECK_EVERY_MS = 60_000;
/**
 * After a batch the service refused whole (a revoked grant), the next waits this, doubling.
 * A notice whose record alone could not be read (its answer out of spec) is held back as long,
 * doubling per notice, while the others go on.
 */
const REFUSAL_WAIT_MS = 30_000;
const MAX_REFUSAL_WAIT_MS = 5 * 60_000;
/**
 * A batch its destination paused (a CRM's daily allowance spent) waits for the reset, but no
 * longer than this: an allowance raised meanwhile is seen within the hour, at one call an hour
 * against a spent one (Salesforce, which does not say when its calls age out, pauses an hour).
 */
const MAX_PAUSE_WAIT_MS = 60 * 60_000;
/** Notices held back at most; past it, the drain waits as for a refusal of the connection. */
const MAX_HELD = 500;

const nextWait = (lastMs: number): number =>
  Math.min(MAX_REFUSAL_WAIT_MS, Math.max(REFUSAL_WAIT_MS, 2 * lastMs));

/**
 * Applies one connection's webhook notices (DESIGN decision 3). The receiver stores each
 * notice in the store's inbox before its 2xx and wakes this workflow (`webhooks:<connection>`)
 * at most every ~100 ms (~400 ms in a steady stream); a batch activity takes the oldest pending notices, reads each record
 * once, writes them through the mirror's write path and marks the notices applied. A full
 * batch is followed by the next at once; otherwise the workflow waits for a wake-up, or checks
 * anyway after a while, so a lost wake-up only delays. One batch at a time, so two reads of a
 * record never overlap: changes land in the order the service made them. Only counts and keys
 * live here; the changes owed to automation endpoints wait in the store under the batch's key
 * (and what a run still owes when it continues as new, the next run sends).
 */
export async function webhookDrainWorkflow(input: DrainInput): Promise<void> {
  const { connectionId } = input;
  let destination = input.destination;
  let woken = input.carried?.woken ?? true;
  // Totals carried from a run before withoutEmail was counted lack it: it starts at zero.
  const totals = { ...emptyDrainTotals(), ...input.carried?.totals };
  let lastRefusal: string | null = null;
  let lastBatchAt: number | null = null;
  /** While a destination's pause holds the next batch: until when (ISO). */
  let pausedUntil: string | null = null;
  /**
   * What lastRefusal said of the last pause, while it is the last refusal: a batch that
   * applies after it says the pause is over (query state only: no command changes).
   */
  // Typed by `as`: set only in waitForReset, so TypeScript would take it for null below.
  let pauseSaid = null as { text: string; why: string } | null;
  let refusalWaitMs = 0;
  // Notice seq -> when it may be tried again and the wait that led there (doubling).
  const held = new Map<number, { untilMs: number; waitMs: number }>(input.carried?.held ?? []);

  // Drains started before the pace learned the service's ceiling replay as they ran. A run
  // continued as new goes on at the pace the last one had reached, not at the full rate.
  const pace = new Pace(
    connectionId,
    { cutOnRepeat: true, learnCeiling: patched('pace-learns-ceiling') },
    input.carried?.pace,
  );
  setHandler(rateLimitedSignal, (signal) => pace.onLimit(signal, Date.now()));
  setHandler(inboxWakeSignal, (wake) => {
    woken = true;
    destination = wake.destination;
  });
  setHandler(drainStatusQuery, (): DrainStatus => ({
    connectionId,
    totals: { ...totals },
    lastRefusal,
    lastBatchAt,
    ...(pausedUntil === null ? {} : { pausedUntil }),
  }));

  // Not awaited: a slow or dead endpoint must not hold back the next batch.
  const forwarding = new Set<string>();
  const forwarded = (what: string, sending: Promise<unknown>): void => {
    forwarding.add(what);
    sending.then(
      () => forwarding.delete(what),
      (error: unknown) => {
        if (isCancellation(error)) return;
        forwarding.delete(what);
        log.warn('automation endpoints were not reached; see ebsync webhooks deliveries', {
          error: error instanceof Error ? error.message : String(error),
        });
      },
    );
  };
  // What the run before was still forwarding when it continued as new: the changes wait in
  // the store, kept before this run began, and go out again from here (to those still owed).
  if (input.carried?.leftovers === true) {
    forwarded(
      'leftovers',
      forwardLeftovers({ connectionId, before: new Date(Date.now()).toISOString() }),
    );
  }

  /** What refused the batch, in the log's words: the service, or the destination's one writer. */
  const REFUSED_BY = {
    service: 'webhook notices wait: the service refused to let them be read',
    destination:
      "webhook notices wait: their destination holds another connection's records, so nothing was written",
  } as const;
  const waitAfterRefusal = async (
    why: string,
    by: keyof typeof REFUSED_BY = 'service',
  ): Promise<void> => {
    lastRefusal = why;
    refusalWaitMs = nextWait(refusalWaitMs);
    log.warn(REFUSED_BY[by], {
      error: why,
      waitMs: refusalWaitMs,
    });
    await sleep(refusalWaitMs);
    woken = true;
  };

  /**
   * A destination's pause: no batch can write before its reset, and each one tried spends a
   * call against the spent allowance (Pipedrive and HubSpot count them), so the next waits
   * until the reset (waitForResetMs bounds it). A wake-up naming another destination ends the
   * wait: the pause was that of the destination the connection no longer writes.
   */
  const waitForReset = async (resumeAt: string, why: string): Promise<void> => {
    refusalWaitMs = nextWait(refusalWaitMs);
    const waitMs = waitForResetMs(resumeAt, Date.now(), {
      floorMs: refusalWaitMs,
      capMs: input.maxPauseMs ?? MAX_PAUSE_WAIT_MS,
    });
    pausedUntil = new Date(Date.now() + waitMs).toISOString();
    lastRefusal = `its destination paused writes: the next batch waits until ${pausedUntil} (${why})`;
    pauseSaid = { text: lastRefusal, why };
    log.warn('webhook notices wait: their destination paused writes until its reset', {
      error: why,
      resumeAt,
      waitMs,
    });
    const pausedDestination = destination;
    await condition(() => destination !== pausedDestination, waitMs);
    pausedUntil = null;
    woken = true;
  };

  /** Seqs still held back; those whose wait is over are tried again in the next batch. */
  const holding = (): number[] => {
    const now = Date.now();
    return [...held].filter(([, h]) => h.untilMs > now).map(([seq]) => seq);
  };
  const nextCheckMs = (): number => {
    const now = Date.now();
    let ms = input.checkEveryMs ?? CHECK_EVERY_MS;
    for (const h of held.values()) ms = Math.min(ms, Math.max(0, h.untilMs - now));
    return ms;
  };
  const hold = (seqs: readonly number[], why: string): void => {
    const now = Date.now();
    let longest = 0;
    for (const seq of seqs) {
      const waitMs = nextWait(held.get(seq)?.waitMs ?? 0);
      held.set(seq, { untilMs: now + waitMs, waitMs });
      longest = Math.max(longest, waitMs);
    }
    log.warn('webhook notices of records that could not be read wait; the others go on', {
      error: why,
      notices: seqs.length,
      waitMs: longest,
    });
  };

  for (let batch = 1; ; batch++) {
    if (!woken) await condition(() => woken, Math.max(1, nextCheckMs()));
    woken = false;
    const batchKey = `${workflowInfo().runId}-${batch}`;
    const heldNow = holding();
    try {
      const out = await batchCalls(pace).drainInbox({
        connectionId,
        destination,
        batchKey,
        ...(heldNow.length > 0 ? { held: heldNow } : {}),
      });
      // The batch applied: the pause is over, and "the next batch waits until" no longer so.
      if (pauseSaid !== null && lastRefusal === pauseSaid.text) {
        lastRefusal = `its destination paused writes (${pauseSaid.why}); batches apply again since ${new Date(Date.now()).toISOString()}`;
      }
      pauseSaid = null;
      // Tried again in this batch (their wait was over) and read this time: let go.
      const still = new Set(out.unreadableSeqs ?? []);
      const passedBy = new Set(heldNow);
      for (const seq of [...held.keys()]) {
        if (!passedBy.has(seq) && !still.has(seq)) held.delete(seq);
      }
      // A result of a worker before drain sessions counts no batches: it was one.
      totals.batches += out.batches ?? 1;
      addDrainCounts(totals, out);
      if (out.notices > 0) lastBatchAt = Date.now();
      if (out.owed > 0) forwarded(batchKey, forwardChanges({ connectionId, batchKey }));
      const newlyHeld = [...still].filter((seq) => !held.has(seq)).length;
      if (still.size > 0 && held.size + newlyHeld <= MAX_HELD) {
        lastRefusal = out.refusal;
        hold([...still], out.refusal ?? 'unreadable');
        refusalWaitMs = 0;
        if (out.more) woken = true;
      } else if (out.refusal !== null && out.notices === 0) {
        await waitAfterRefusal(out.refusal);
      } else {
        if (out.refusal !== null) lastRefusal = out.refusal;
        refusalWaitMs = 0;
        if (out.more) woken = true;
      }
    } catch (error) {
      if (isCancellation(error)) throw error;
      // A destination's pause (a CRM's daily allowance): what the batch wrote before it is in
      // the ledger, so the batch tried again finds it up to date; it is counted written here.
      addDrainCounts(totals, pausedCounts(error));
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      const why = cause instanceof Error ? cause.message : String(cause);
      // Drains paused under an older worker replay as they ran: tried again after the
      // refusal's wait (30 s doubling to 5 minutes) whatever the reset.
      const paused = destinationPause(error);
      if (paused !== undefined && patched('drain-waits-for-reset')) {
        await waitForReset(paused.resumeAt, why);
      } else {
        // Refused for good (a grant revoked, a destination that does not exist): the notices
        // stay in the inbox, and the batch is tried again after a wait.
        // The one-writer check (Ledger.claimDestination) refuses before anything is written,
        // and the service had nothing to do with it: the log said the service refused the reads.
        const claimed = cause instanceof ApplicationFailure && cause.type === DESTINATION_CLAIMED;
        await waitAfterRefusal(why, claimed ? 'destination' : 'service');
      }
    }
    if (
      workflowInfo().continueAsNewSuggested ||
      (input.batchesPerRun !== undefined && batch >= input.batchesPerRun)
    ) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof webhookDrainWorkflow>({
        ...input,
        destination,
        carried: {
          totals,
          woken,
          leftovers: forwarding.size > 0,
          held: [...held],
          pace: pace.state(),
        },
      });
    }
  }
}

/** What a batch a destination paused had written (the failure's passCounts), else nothing. */
function pausedCounts(error: unknown): Partial<DrainTotals> {
  const counts = destinationPause(error)?.passCounts;
  const out: Partial<DrainTotals> = {};
  for (const key of ['written', 'refused', 'withoutEmail'] as const) {
    const value = counts?.[key];
    if (typeof value === 'number') out[key] = value;
  }
  return out;
}
