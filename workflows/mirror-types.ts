/**
 * The mirror workflow's contract with its activities and the CLI: plain data types and
 * constants, and its progress query (called by this definition, never by name).
 */
import { defineQuery } from '@temporalio/workflow';
import type { PaceState } from './rate-limit.js';

/** What a user asks to mirror: `ebsync sync leads|events|appointments|all`. */
export type MirrorSubject = 'leads' | 'events' | 'appointments';
export const MIRROR_SUBJECTS: readonly MirrorSubject[] = ['leads', 'events', 'appointments'];

/**
 * full: every record is read (events too), changes are written, and after a complete pass the
 * records the ledger has but the pass did not see are re-read by id (404 = deleted).
 * incremental: the lists are read and changes written; events are read only where their
 * bookings changed; nothing is deleted.
 */
export type MirrorMode = 'full' | 'incremental';

export interface MirrorInput {
  connectionId: string;
  /** `sqlite:PATH` or `postgres://…` (sealed in history by the payload codec like every payload). */
  destination: string;
  subjects: MirrorSubject[];
  mode: MirrorMode;
  /** Pages of partitions read at once. */
  concurrency?: number;
  /**
   * The connection's credentials version when the pass was asked for (`ebsync sync` reads it):
   * a worker holding credentials from before it, a reconnect made just before the sync it has
   * not seen yet, asks the connection's workflow before the first request instead of within
   * the usual second. Absent (schedules, older callers): that second.
   */
  credentialsVersion?: number;
  /**
   * Every record read is written again, whatever the ledger holds: for rows changed or
   * removed in the destination by hand, which the ledger cannot see (`ebsync sync --rewrite`).
   */
  rewrite?: boolean;
  /** Page activities per run before continue-as-new (default 400; small in tests). */
  pagesPerRun?: number;
  /** Carried over continue-as-new; absent on the first run. */
  carried?: MirrorCarried;
}

/**
 * One partition of a pass, as the planner made it: the workflow never looks inside `spec` or
 * `cursor`, it only passes them back to the page activity.
 */
export interface PartitionState {
  key: string;
  subject: MirrorSubject;
  spec: unknown;
  cursor: unknown;
  done: boolean;
  /** Records this partition holds by the service's total_count, where known. */
  expected: number;
  /** Read only after this partition is done (lead bookings after leads). */
  after?: string;
  /**
   * Its pages name records that are read by id and that no list counts (the events of event
   * bookings): until it is done, the pass cannot say how much is left.
   */
  uncounted?: true;
  /**
   * What its activities did so far, as the store's cursor counts it; the pass's counts grow by
   * the difference each activity reports. Absent in passes from before cursors were stored.
   */
  tally?: PartitionTally;
  /**
   * Set when the service refused its list to this credential from the first request (a 403
   * naming a permission it lacks): the partition is settled unread, the pass ends incomplete,
   * and the deletion sweep leaves its subject alone.
   */
  forbidden?: string;
}

/** Running counts of one partition's reads and writes, kept with its cursor in the store. */
export interface PartitionTally {
  pages: number;
  requests: number;
  read: number;
  written: number;
  unchanged: number;
  /** Records this pass had read before (absent in tallies from before it was counted). */
  again: number;
  refused: number;
  /** Records the destination has no place for (see MirrorCounts.passedOver). */
  passedOver: number;
  /** Records written with no email address to link a contact by (see MirrorCounts). */
  withoutEmail: number;
}

/**
 * The service's reach as a pass found it, when a page showed it below the configured one
 * (the configured reach is only a first guess).
 */
export interface LearnedReach {
  /** The list where a page showed it. */
  resource: string;
  configured: number;
  reach: number;
  /** The page that showed it: page `page` at `per` held `items` of a total_count of `total`. */
  page: number;
  per: number;
  items: number;
  total: number;
}

export interface MirrorCounts {
  pages: number;
  requests: number;
  read: number;
  written: number;
  /** Records the destination held already, from an earlier pass. */
  unchanged: number;
  /**
   * Records this pass read more than once (overlapping queries, a lead's bookings read with it
   * and again from the booking list): written or found up to date the first time. Absent in
   * passes from before it was counted, which counted them as unchanged.
   */
  again?: number;
  deleted: number;
  /** Records the service counts but no split of the query can reach (reported, never silent). */
  unreachable: number;
  /** Records the service said the pass would find (sum of total_counts). */
  expected: number;
  /** Records the destination refused one by one (a CRM's duplicate rule): tried next pass. */
  refused: number;
  /**
   * Records read that the destination has no place for (bookings and appointments, in a CRM):
   * not written, not refused. Absent in passes from before it was counted, which counted them
   * as written.
   */
  passedOver?: number;
  /**
   * Records a CRM wrote (counted in `written`) that hold no email address, so that no contact
   * is linked to them (UpsertResult.withoutEmail). Absent in passes from before it was counted.
   */
  withoutEmail?: number;
}

/**
 * `incomplete`: the pass ran to its end but left records unreachable or refused (counts and
 * gaps say which); it is never `done` with a footnote.
 */
export type MirrorPhase =
  'planning' | 'reading' | 'deleting' | 'done' | 'incomplete' | 'failed' | 'paused';

/** Failure type of a destination that takes no calls before a reset (a CRM's daily quota). */
export const DESTINATION_PAUSED = 'DestinationPausedError';

/**
 * Failure type of a destination another connection writes (store/errors.ts's class name, which
 * the activity's failure carries as its type): nothing was written, and the service had no part.
 */
export const DESTINATION_CLAIMED = 'DestinationClaimedError';

export interface MirrorCarried {
  passId: string;
  generation: number;
  startedAt: number;
  partitions: PartitionState[];
  counts: MirrorCounts;
  phase: MirrorPhase;
  /** Where the deletion sweep goes on from (last ledger id checked), per subject. */
  sweepAfter: string | null;
  /** Reach-limit gaps the planner found, one line each. */
  gaps: string[];
  /** Why the destination refused records, one line each (the first few). */
  refusals?: string[];
  /** The lowest reach a page showed, when below the configured one. */
  reach?: LearnedReach;
  /** The read by id of lead ids no list returned (activities/mirror/probe-ids.ts). */
  probe?: IdProbe;
  runs: number;
  /** The connection's pace as the last run left it (absent from older versions). */
  pace?: PaceState;
}

/** How far the pass read lead ids between those its lists returned, and what it found. */
export interface IdProbe {
  /** The last id asked about; null before the first. */
  after: number | null;
  /** Ids read, and leads they found. */
  probes: number;
  found: number;
  done: boolean;
}

export const emptyProbe = (): IdProbe => ({ after: null, probes: 0, found: 0, done: false });

/** What a running pass has done so far, for `ebsync sync` and the status. */
export const mirrorProgressQuery = defineQuery<MirrorProgress>('mirrorProgress');

export interface MirrorProgress {
  connectionId: string;
  destination: string;
  mode: MirrorMode;
  /** Set when the pass writes every record again (MirrorInput.rewrite). */
  rewrite?: boolean;
  /** The service turned requests away while the worker had no EBS_RATE_LIMIT to keep to. */
  noRateLimit?: boolean;
  subjects: MirrorSubject[];
  phase: MirrorPhase;
  passId: string | null;
  generation: number | null;
  startedAt: number | null;
  elapsedMs: number;
  /**
   * `uncounted`: partitions not done yet that read records no list counts (absent from
   * workers before it was kept: none).
   */
  partitions: {
    total: number;
    done: number;
    uncounted?: number;
    /**
     * Partitions done, and those not done whose list's count is known (a page of it read):
     * until all counted ones are known, what was read is measured against part of the pass
     * (absent from older workers).
     */
    counted?: number;
  };
  counts: MirrorCounts;
  gaps: string[];
  /** Why the destination refused records, one line each (the first 20 of the pass). */
  refusals: string[];
  /**
   * Lists the service refused to the connection's credential (`leads: <the service's words>`),
   * left unread: the pass ends incomplete (absent when none, and from older versions).
   */
  forbidden?: string[];
  /**
   * The service's reach as the pass learned it, when a page showed it below the setting
   * (absent from passes of older versions).
   */
  reach?: LearnedReach | null;
  /** The read by id of the lead ids the lists skipped, when the pass made one. */
  probe?: IdProbe | null;
  /** Records read per second over the pass so far. */
  ratePerSecond: number;
  /**
   * The share of EBS_RATE_LIMIT the connection's requests run at: below 1 for a while after
   * the service turned requests away (workflows/rate-limit.ts; absent from older versions).
   */
  pace?: number;
  /** Time left at that rate, from the expected count; null when unknown. */
  etaMs: number | null;
  /** Set when the pass failed, or why it paused. */
  error: string | null;
  /** When the destination takes calls again (phase `paused`); run the mirror again then. */
  pausedUntil?: string;
}

export type MirrorSummary = MirrorProgress;

/** Refusal lines kept per write and per pass: enough to act on, never a history-sized list. */
export const MAX_REFUSAL_LINES = 20;

/**
 * What a refusal line says of a record a CRM took only in part (a deal without its contact):
 * `<resource> <id> written in part: <code>: <message>`. Such a record counts as written, and the
 * summary tells these lines from those of records refused whole by it.
 */
export const PARTLY_WRITTEN = 'written in part';
/**
 * What a refusal line says of a record the service deleted and a CRM would not delete:
 * `<resource> <id> not deleted: <code>: <message>`. It counts as refused.
 */
export const NOT_DELETED = 'not deleted';

export const isPartlyWrittenLine = (line: string): boolean => line.includes(` ${PARTLY_WRITTEN}: `);

/** Adds refusal lines to those kept, up to MAX_REFUSAL_LINES. */
export function keepRefusals(
  kept: readonly string[] | undefined,
  more: readonly string[],
): string[] {
  return [...(kept ?? []), ...more].slice(0, MAX_REFUSAL_LINES);
}

export const emptyCounts = (): MirrorCounts => ({
  pages: 0,
  requests: 0,
  read: 0,
  written: 0,
  unchanged: 0,
  again: 0,
  deleted: 0,
  unreachable: 0,
  expected: 0,
  refused: 0,
  passedOver: 0,
  withoutEmail: 0,
});

/**
 * Milliseconds left at the pass's rate so far; null when unknown. Events are read by id (no
 * list counts them beforehand), so while a partition that reads them is not done
 * (`uncounted`), or once the reads pass the lists' counts, an ETA would be a claim: it is
 * unknown until the pass is done.
 */
export function etaOf(
  counts: MirrorCounts,
  done: boolean,
  ratePerSecond: number,
  uncounted = 0,
): number | null {
  if (done) return 0;
  if (uncounted > 0) return null;
  const left = counts.expected - counts.read - counts.unreachable;
  if (ratePerSecond <= 0 || counts.expected <= 0 || left <= 0) return null;
  return Math.round((left / ratePerSecond) * 1000);
}

/** What an activity did since the tally the workflow had: the new tally minus the old. */
export function tallyDelta(
  now: PartitionTally,
  before: PartitionTally | undefined,
): Partial<MirrorCounts> {
  const out: Partial<MirrorCounts> = {};
  for (const key of Object.keys(now) as (keyof PartitionTally)[]) {
    out[key] = Math.max(0, now[key] - (before?.[key] ?? 0));
  }
  return out;
}

/**
 * A finished pass is incomplete when it left records unreachable, refused or written only in
 * part (a deal whose contact or link the CRM refused: a refusal line, counted as written), or a
 * list unread that its credential may not read.
 */
export const isIncomplete = (
  counts: MirrorCounts,
  forbidden: readonly unknown[] = [],
  refusals: readonly string[] = [],
): boolean =>
  counts.unreachable > 0 || counts.refused > 0 || forbidden.length > 0 || refusals.length > 0;

/** The lines of the lists a pass's credential may not read, one per partition refused. */
export const forbiddenLines = (partitions: readonly PartitionState[]): string[] =>
  partitions.flatMap((p) =>
    p.forbidden === undefined
      ? []
      : [`${p.key === p.subject ? p.subject : `${p.subject} (${p.key})`}: ${p.forbidden}`],
  );

export function addCounts(into: MirrorCounts, more: Partial<MirrorCounts>): void {
  for (const key of Object.keys(more) as (keyof MirrorCounts)[]) {
    // `?? 0`: a pass carried over from before a count existed holds no such key.
    into[key] = (into[key] ?? 0) + (more[key] ?? 0);
  }
}

/** One mirror per connection and destination, so a second `ebsync sync` attaches to it. */
export function mirrorWorkflowId(connectionId: string, destinationKey: string): string {
  return `mirror-${connectionId}-${destinationKey}`;
}
