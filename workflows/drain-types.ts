import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DrainBatchOutput } from '../activities/mirror/drain-inbox.js';
import type { PaceState } from './rate-limit.js';

/** One connection's drain: the notices the receiver stored, applied in batches (DESIGN decision 3). */
export interface DrainInput {
  connectionId: string;
  /** Where the connection's records are written (its webhook registration's destination). */
  destination: string;
  /** Without a wake-up the inbox is still checked this often (a missed wake-up costs no more). */
  checkEveryMs?: number;
  /** Batches per run before it continues as new; by default when Temporal suggests it. */
  batchesPerRun?: number;
  /** A batch its destination paused waits for the reset at most this (an hour by default). */
  maxPauseMs?: number;
  /** Carried across continue-as-new. */
  carried?: DrainCarried;
}

/** What the batches applied, summed. */
export type DrainTotals = { batches: number } & Pick<
  DrainBatchOutput,
  'notices' | 'records' | 'written' | 'unchanged' | 'deleted' | 'refused' | 'withoutEmail'
>;

export interface DrainCarried {
  totals: DrainTotals;
  /** A wake-up came that no batch answered yet. */
  woken: boolean;
  /**
   * The run before was still forwarding changes to automation endpoints: the next run sends
   * what is left of them (kept in the store) again. A flag, not a list: a dead endpoint would
   * otherwise grow the list for hours, past what a run's input may carry.
   */
  leftovers: boolean;
  /** Notices held back (seq, when they may be tried again, the wait that led there). */
  held?: [number, { untilMs: number; waitMs: number }][];
  /** The connection's pace as the last run left it (absent from older versions). */
  pace?: PaceState;
}

/** What a wake-up says: notices are waiting, and where the connection's records go now. */
export interface DrainWake {
  destination: string;
}

/** The drain's state for the status: counts since the first run, and the last refusal. */
export interface DrainStatus {
  connectionId: string;
  totals: DrainTotals;
  /** Why the last batch could not read some records (refused, or answered out of spec), or null. */
  lastRefusal: string | null;
  /** Epoch ms of the last batch that took notices; null before any. */
  lastBatchAt: number | null;
  /**
   * While its destination paused it (a CRM's daily allowance spent): when the next batch goes,
   * the reset or the most a pause waits. Absent otherwise, and from drains before it was said.
   */
  pausedUntil?: string;
}

/** The receiver sends it at most every ~100 ms per connection, ~400 ms while deliveries keep coming. */
export const inboxWakeSignal = defineSignal<[DrainWake]>('inboxWake');
export const drainStatusQuery = defineQuery<DrainStatus>('drainStatus');

/** One drain per connection: every receiver's wake-ups land in the same workflow. */
export function drainWorkflowId(connectionId: string): string {
  return `webhooks:${connectionId}`;
}

export const emptyDrainTotals = (): DrainTotals => ({
  batches: 0,
  notices: 0,
  records: 0,
  written: 0,
  unchanged: 0,
  deleted: 0,
  refused: 0,
  withoutEmail: 0,
});

/** The counts a batch (or a session of batches) reports, besides how many batches it took. */
type DrainCounts = Omit<DrainTotals, 'batches'>;
/** Every count, by name: the keys of the zero totals (whose type names them all) but batches. */
const DRAIN_COUNTS = Object.keys(emptyDrainTotals()).filter(
  (key): key is keyof DrainCounts => key !== 'batches',
);

/**
 * Adds `from`'s counts to `into`: one sum for the workflow's totals and an activity's session.
 * A count `from` lacks (a worker from before it was counted) adds nothing.
 */
export function addDrainCounts(into: DrainCounts, from: Partial<DrainCounts>): void {
  for (const key of DRAIN_COUNTS) into[key] += from[key] ?? 0;
}
