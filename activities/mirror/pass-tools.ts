import { log } from '@temporalio/activity';
import type { Client as ServiceClient } from '../../api/client.js';
import type { Destination } from '../../destinations/destination.js';
import type { Resource } from '../../destinations/record.js';
import type { Ledger, LedgerScope, PassKey } from '../../store/ledger.js';
import {
  MAX_REFUSAL_LINES,
  type MirrorMode,
  type MirrorSubject,
} from '../../workflows/mirror-types.js';
import type { WriteTarget } from './write-records.js';

/**
 * What the mirror's activities share: their dependencies, how they open a pass's ledger and
 * destination, and the names the store keeps a pass's cursors under. Each activity is a file
 * of its own (plan-pass.ts, mirror-page.ts, sweep-deletions.ts, finish-pass.ts); pass.ts puts
 * them together.
 */

export interface MirrorDeps {
  /**
   * A client of the service with the connection's credentials (from its workflow). With
   * `credentialsVersion` (the connection's when the pass was asked for), credentials this
   * process holds from before that version are not used: it asks the workflow first.
   */
  clientFor(connectionId: string, credentialsVersion?: number): Promise<ServiceClient>;
  /**
   * Asks the connection's workflow now, not within the usual second, whether its credentials
   * are still the ones this process's client was made with: true when a reconnect replaced
   * them (the next clientFor then makes a client with the new ones). Before a refusal is taken
   * as the credential's last word, a reconnect made just before the sync must not be missed.
   * Absent: the credentials never change (deps that build clients directly).
   */
  credentialsReplaced?(connectionId: string): Promise<boolean>;
  /** The process's ledger (opened once). */
  ledger(): Promise<Ledger>;
  /** The destination of a target string, opened once per process. */
  destination(target: string): Promise<Destination>;
  /** The service's reach limit (10,000 in the spec; the sandbox's --reach-limit). */
  reachLimit: number;
  /** Page size asked for; the service grants what it grants. */
  per: number;
  /** See PlanOptions.minYield (EBSYNC_MIRROR_MIN_YIELD; default 1). */
  minYield?: number;
  /** Pages one activity fetches at once at first, and records read by id at once (default 4). */
  pagesInFlight?: number;
  /**
   * Pages one activity may come to fetch at once when the service answers slower than the
   * pages are handled (activities/mirror/lane-sizing.ts; default 16, pagesInFlight under a
   * rate limit, where the pace and not the round trip sets the speed).
   */
  maxPagesInFlight?: number;
  /** Pages one activity reads before handing its cursor back (default 16). */
  pagesPerActivity?: number;
  /**
   * How long one activity goes on reading records by id (the events its page of event
   * bookings names) before handing back what it has: default READ_BY_ID_MS.
   */
  readByIdMs?: number;
  /** How long one activity starts pages before handing its cursor back (default SLICE_MS). */
  sliceMs?: number;
  /** Records a slice hands the write path together (default 500). */
  writeBatch?: number;
}

/**
 * A page of event bookings can name a hundred events, each one request: at the default pace
 * (10 a second) the pages of one activity took half a minute, and the pass's progress, which
 * moves when an activity returns, stood still meanwhile. An activity stops asking after this
 * long; what it read is written and counted, and the next one asks for the rest.
 */
export const READ_BY_ID_MS = 5_000;

/**
 * A slice of pages ends after this long even with pages of its budget left: against a service
 * answering in 1.5 s a slice of 16 pages took most of a minute, and the pass's progress, which
 * moves when an activity returns, said '63 read' while 3,000 rows were written. A fast service
 * ends its slices by their page budget long before this.
 */
export const SLICE_MS = 3_000;

export interface MirrorTarget {
  connectionId: string;
  destination: string;
  mode: MirrorMode;
  /** MirrorInput.credentialsVersion, for clientFor. */
  credentialsVersion?: number;
}

/** A pass's ledger and destination, opened, with the destination's id. */
export type OpenTarget = WriteTarget & { destinationId: string };

export interface PassTools {
  deps: MirrorDeps;
  /** Pages in flight at first, and records read by id at once. */
  lanes: number;
  /** Pages in flight at most (lane-sizing.ts). */
  maxLanes: number;
  /**
   * Pages in flight each connection's last slice came to in this process: the next slice
   * starts there, so an activity does not ramp up again against a service it has measured.
   */
  learnedLanes: Map<string, number>;
  pagesPerActivity: number;
  readByIdMs: number;
  sliceMs: number;
  writeBatch: number | undefined;
  open: (target: MirrorTarget) => Promise<OpenTarget>;
  scopeOf: (at: { connectionId: string; destinationId: string }, resource: Resource) => LedgerScope;
}

export function passTools(deps: MirrorDeps): PassTools {
  return {
    deps,
    lanes: Math.max(1, deps.pagesInFlight ?? 4),
    maxLanes: Math.max(1, deps.pagesInFlight ?? 4, deps.maxPagesInFlight ?? 16),
    learnedLanes: new Map(),
    pagesPerActivity: Math.max(1, deps.pagesPerActivity ?? 16),
    readByIdMs: Math.max(0, deps.readByIdMs ?? READ_BY_ID_MS),
    sliceMs: Math.max(0, deps.sliceMs ?? SLICE_MS),
    writeBatch: deps.writeBatch,
    open: async (target) => {
      const [ledger, destination] = await Promise.all([
        deps.ledger(),
        deps.destination(target.destination),
      ]);
      return {
        connectionId: target.connectionId,
        ledger,
        destination,
        destinationId: destination.describe().id,
      };
    },
    scopeOf: (at, resource) => ({
      connectionId: at.connectionId,
      destination: at.destinationId,
      resource,
    }),
  };
}

/** An error no retry can fix (the service refused, or our own bug): fail at once. */
export const isRefusal = (error: unknown): boolean =>
  (error as { retryable?: unknown } | null)?.retryable === false;

const passName = (subjects: readonly MirrorSubject[], mode: MirrorMode): string =>
  `${[...subjects].sort().join('+')}:${mode}`;

export const passKeyOf = (
  at: { connectionId: string; destinationId: string },
  subjects: readonly MirrorSubject[],
  mode: MirrorMode,
): PassKey => ({
  connectionId: at.connectionId,
  destination: at.destinationId,
  pass: passName(subjects, mode),
});

/** Refusal lines for an activity's result: absent when none, at most a few, and logged. */
export function refusalsOf(lines: readonly string[]): { refusals?: string[] } {
  if (lines.length === 0) return {};
  const kept = lines.slice(0, MAX_REFUSAL_LINES);
  log.warn('the destination refused records; the next pass tries them again', {
    refusals: kept,
  });
  return { refusals: kept };
}
