import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as ServiceClient } from '../../api/client.js';
import type { Destination } from '../../destinations/destination.js';
import type { Resource } from '../../destinations/record.js';
import { ALL_TABLES } from '../../destinations/tables.js';
import { withServiceFailures } from '../failures.js';
import type { Ledger, LedgerScope, PassKey } from '../../store/ledger.js';
import {
  MAX_REFUSAL_LINES,
  type LearnedReach,
  type MirrorCounts,
  type MirrorMode,
  type MirrorSubject,
  type PartitionState,
  type PartitionTally,
  tallyDelta,
} from '../../workflows/mirror-types.js';
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
import { loadPartition, savedPlan, savePartition } from './plan-checkpoints.js';
import { readRecords, type ManyRead } from './records-by-id.js';
import { readSlice } from './read-slice.js';
import { asError, recountRoot } from './source-pages.js';
import { writeDeletions, writeRecords, type WriteTarget } from './write-records.js';

export interface MirrorDeps {
  /** A client of the service with the connection's credentials (from its workflow). */
  clientFor(connectionId: string): Promise<ServiceClient>;
  /**
   * The client only if this process can give it without asking the connection workflow;
   * otherwise undefined, and the asking starts in the background. A local activity holds its
   * workflow task's slot while it runs, and the connection workflow answers only in a slot of
   * its own: a read that waited for that answer could wait for good when reads fill the slots.
   * Absent: every client is at hand (deps that build clients directly).
   */
  clientIfReady?(connectionId: string): Promise<ServiceClient> | undefined;
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
  /** Pages one activity fetches at once, and records read by id at once (default 4). */
  pagesInFlight?: number;
  /** Pages one activity reads before handing its cursor back (default 16). */
  pagesPerActivity?: number;
}

export interface MirrorTarget {
  connectionId: string;
  destination: string;
  mode: MirrorMode;
}

/** The lists each subject reads, in order: lead bookings after leads (they read the rest by id). */
const LISTS: Record<MirrorSubject, { key: ListResource; after?: ListResource }[]> = {
  leads: [{ key: 'leads' }, { key: 'lead_bookings', after: 'leads' }],
  events: [{ key: 'event_bookings' }],
  appointments: [{ key: 'appointments' }],
};

/** The tables a subject fills: what a deletion sweep re-reads. */
export const SUBJECT_RESOURCES: Record<MirrorSubject, Resource[]> = {
  leads: ['leads', 'lead_bookings'],
  events: ['events', 'event_bookings'],
  appointments: ['appointments'],
};

/** An error no retry can fix (the service refused, or our own bug): fail at once. */
const isRefusal = (error: unknown): boolean =>
  (error as { retryable?: unknown } | null)?.retryable === false;

/** Ids a read by id has an answer for: the record, or the service's 404. */
const answeredIds = (got: ManyRead): Set<string> =>
  new Set([...got.reads.map((r) => r.record.id), ...got.missing]);

const passName = (subjects: readonly MirrorSubject[], mode: MirrorMode): string =>
  `${[...subjects].sort().join('+')}:${mode}`;

const passKeyOf = (
  at: { connectionId: string; destinationId: string },
  subjects: readonly MirrorSubject[],
  mode: MirrorMode,
): PassKey => ({
  connectionId: at.connectionId,
  destination: at.destinationId,
  pass: passName(subjects, mode),
});

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
}

/** Refusal lines for an activity's result: absent when none, at most a few, and logged. */
function refusalsOf(lines: readonly string[]): { refusals?: string[] } {
  if (lines.length === 0) return {};
  const kept = lines.slice(0, MAX_REFUSAL_LINES);
  log.warn('the destination refused records; the next pass tries them again', {
    refusals: kept,
  });
  return { refusals: kept };
}

export function createMirrorActivities(deps: MirrorDeps) {
  const lanes = Math.max(1, deps.pagesInFlight ?? 4);
  const pagesPerActivity = Math.max(1, deps.pagesPerActivity ?? 16);

  async function open(target: MirrorTarget): Promise<WriteTarget & { destinationId: string }> {
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
  }

  const scopeOf = (
    at: { connectionId: string; destinationId: string },
    resource: Resource,
  ): LedgerScope => ({ connectionId: at.connectionId, destination: at.destinationId, resource });

  const activities = {
    /** Opens a pass: its generation in the ledger, the destination's tables, its partitions. */
    async planMirrorPass(input: MirrorTarget & { subjects: MirrorSubject[] }): Promise<{
      passId: string;
      generation: number;
      partitions: PartitionState[];
      counts: Partial<MirrorCounts>;
      gaps: string[];
    }> {
      const at = await open(input);
      await at.destination.ensureSchema(ALL_TABLES);
      const key = passKeyOf(at, input.subjects, input.mode);
      // A new workflow is a new pass: whatever pass of this key was left open was interrupted.
      const pass = await at.ledger.beginPass(key, { restart: true });
      const partitions: PartitionState[] = input.subjects.flatMap((subject) =>
        LISTS[subject].map((list) => ({
          key: list.key,
          subject,
          spec: { resource: list.key, ...(list.after ? { after: list.after } : {}) },
          cursor: null,
          done: false,
          expected: 0,
          ...(list.after ? { after: list.after } : {}),
        })),
      );
      return {
        passId: `${key.pass}#${pass.generation}`,
        generation: pass.generation,
        partitions,
        counts: {},
        gaps: [],
      };
    },

    /**
     * Advances one partition by up to a few pages (one request each, fetched at once), plus
     * the reads by id those pages call for, and writes what changed.
     */
    async mirrorPage(input: PageInput): Promise<PageOutput> {
      const resource = (input.partition.spec as { resource: ListResource }).resource;
      const [at, client] = await Promise.all([open(input), deps.clientFor(input.connectionId)]);
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
      if (resource === 'lead_bookings' && plan.requests === 0) {
        // Every lead's bookings come with its page of leads: when the leads were all read, the
        // booking list holds nothing the pass lacks, and one request for its count shows it.
        const total = await recountRoot(client, plan);
        saved.tally.requests += 1;
        const seen = await at.ledger.countSeen(scopeOf(at, 'lead_bookings'), input.generation);
        if (seen >= total) completeUnread(plan, total);
      }
      const startedWithWork = !planComplete(plan);
      const slice = await readSlice(
        plan,
        client,
        { ...at, generation: input.generation, mode: input.mode },
        { lanes, budget: pagesPerActivity, onProgress: () => ctx.heartbeat() },
      );
      if (startedWithWork && slice.requests === 0) {
        throw ApplicationFailure.create({
          type: 'PlanStuck',
          message: `${resource}: the partition plan has nothing left to read but is not complete`,
          nonRetryable: true,
        });
      }
      const refusal = slice.failures.find(isRefusal);
      if (refusal !== undefined) throw refusal;
      // Nothing read in this activity at all: fail, so the retry policy (or Retry-After)
      // spaces the next try. Otherwise keep what was read and hand the cursor back.
      const [failure] = slice.failures;
      if (failure && slice.pages === 0 && slice.read === 0) throw failure;
      const totals = slice;
      const refusals = slice.refusals;
      const tally = saved.tally;
      tally.pages += totals.pages;
      tally.requests += totals.requests;
      tally.read += totals.read;
      tally.written += totals.written;
      tally.unchanged += totals.unchanged;
      tally.refused += totals.refused;
      let done = planComplete(plan);
      let expected = planReport(plan).totalCount ?? 0;
      let unreachable = 0;
      const gaps: string[] = [];
      if (done) {
        // Exact: what the service counts minus the distinct records this pass reached.
        const reached = (r: Resource) => at.ledger.countSeen(scopeOf(at, r), input.generation);
        let missing = Math.max(0, expected - (await reached(resource)));
        if (missing > 0 && rereadMoved(plan) > 0) {
          // Some query's count moved while it was read: a record may have slipped between
          // its pages. Those queries are read again before anything is called unreachable.
          done = false;
        } else if (missing > 0) {
          // Records deleted since the list was first counted are no gap: count it again.
          const now = await recountRoot(client, plan);
          tally.requests += 1;
          if (now < expected) {
            expected = now;
            missing = Math.max(0, expected - (await reached(resource)));
          }
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
      };
    },

    /**
     * After a complete full pass: records the ledger has but the pass did not see are read by
     * id; a 404 marks them deleted, in the destination and the ledger. A few at a time.
     */
    async sweepDeletions(
      input: MirrorTarget & {
        subjects: MirrorSubject[];
        generation: number;
        after: string | null;
      },
    ): Promise<{
      after: string | null;
      done: boolean;
      counts: Partial<MirrorCounts>;
      refusals?: string[];
    }> {
      const order = input.subjects.flatMap((s) => SUBJECT_RESOURCES[s]);
      const [startResource, startId] = (input.after ?? '').split('|') as [string, string?];
      let index = Math.max(0, order.indexOf(startResource as Resource));
      let afterId = input.after ? startId : undefined;
      const at = await open(input);
      const client = await deps.clientFor(input.connectionId);
      for (; index < order.length; index += 1, afterId = undefined) {
        const resource = order[index]!;
        const scope = scopeOf(at, resource);
        const unseen = await at.ledger.listUnseen(scope, input.generation, {
          limit: lanes * 8,
          ...(afterId ? { after: afterId } : {}),
        });
        if (unseen.length === 0) continue;
        const got = await readRecords(
          client,
          resource,
          unseen.map((e) => e.id),
          { concurrency: lanes, keepGoing: true },
        );
        Context.current().heartbeat();
        const refusal = got.failed.find((f) => isRefusal(f.error));
        if (refusal) throw asError(refusal.error);
        // The sweep moves on only past ids it has an answer for; the rest are asked again.
        const ids = unseen.map((e) => e.id);
        const has = answeredIds(got);
        const firstOpen = ids.findIndex((id) => !has.has(id));
        const answered = firstOpen === -1 ? ids : ids.slice(0, firstOpen);
        if (answered.length === 0) throw asError(got.failed[0]?.error);
        const settled = new Set(answered);
        const found = got.reads
          .filter((r) => settled.has(r.record.id))
          .flatMap((r) => [r.record, ...r.included]);
        const gone = got.missing.filter((id) => settled.has(id));
        const written = await writeRecords(at, input.generation, found);
        await writeDeletions(at, resource, gone);
        return {
          after: `${resource}|${answered[answered.length - 1]!}`,
          done: false,
          counts: {
            requests: got.requests,
            read: found.length,
            written: written.written,
            unchanged: written.unchanged,
            refused: written.refused,
            deleted: gone.length,
          },
          ...refusalsOf(written.refusals),
        };
      }
      return { after: null, done: true, counts: {} };
    },

    /**
     * Closes a pass: a complete one is recorded, with its final count of records the service
     * has and the pass did not reach (after the deletion sweep, which reads by id every
     * record the ledger knows and the lists missed); an interrupted one stays open, deleting
     * nothing.
     */
    async finishMirrorPass(
      input: MirrorTarget & {
        subjects: MirrorSubject[];
        generation: number;
        complete: boolean;
        /** The service's total_count of each list (partition key → count). */
        expectedOf?: Record<string, number>;
      },
    ): Promise<{ unreachable: number; gaps: string[] }> {
      if (!input.complete) return { unreachable: 0, gaps: [] };
      const at = await open(input);
      const key = passKeyOf(at, input.subjects, input.mode);
      let unreachable = 0;
      const gaps: string[] = [];
      for (const [list, expected] of Object.entries(input.expectedOf ?? {})) {
        const seen = await at.ledger.countSeen(scopeOf(at, list as Resource), input.generation);
        const missing = Math.max(0, expected - seen);
        unreachable += missing;
        // The other lists reported their gaps when they finished; leads are settled here,
        // after the leads only their bookings name were read by id.
        if (list === 'leads' && missing > 0) {
          const plan = await savedPlan(at.ledger, key, input.generation, list);
          gaps.push(...gapLines(list, plan?.gaps ?? [], missing, expected));
        }
      }
      await at.ledger.completePass(key, input.generation);
      return { unreachable, gaps };
    },
  };
  // Service, store and destination errors leave as failures that say whether to retry.
  return {
    planMirrorPass: withServiceFailures(activities.planMirrorPass.bind(activities)),
    mirrorPage: withServiceFailures(activities.mirrorPage.bind(activities)),
    sweepDeletions: withServiceFailures(activities.sweepDeletions.bind(activities)),
    finishMirrorPass: withServiceFailures(activities.finishMirrorPass.bind(activities)),
  };
}
