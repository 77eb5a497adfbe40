import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as ServiceClient } from '../../api/client.js';
import type { Destination } from '../../destinations/destination.js';
import type { Resource } from '../../destinations/record.js';
import { ALL_TABLES } from '../../destinations/tables.js';
import { withServiceFailures } from '../failures.js';
import type { Ledger, LedgerScope, PassKey } from '../../store/ledger.js';
import type {
  MirrorCounts,
  MirrorMode,
  MirrorSubject,
  PartitionState,
} from '../../workflows/mirror-types.js';
import type { CanonicalRecord } from './canonical.js';
import {
  createPlan,
  partitionPlanSchema,
  planComplete,
  planReport,
  type ListResource,
  type PartitionPlan,
  type PlanGap,
} from './partition-plan.js';
import { readRecord, readRecords } from './records-by-id.js';
import type { FetchedPage } from './source-pages.js';
import { drivePlan, PlanStuckError } from './source-pass.js';
import { writeRecords, type WriteCounts, type WriteTarget } from './write-records.js';

export interface MirrorDeps {
  /** A client of the service with the connection's credentials (from its workflow). */
  clientFor(connectionId: string): Promise<ServiceClient>;
  /** The process's ledger (opened once). */
  ledger(): Promise<Ledger>;
  /** The destination of a target string, opened once per process. */
  destination(target: string): Promise<Destination>;
  /** The service's reach limit (10,000 in the spec; the sandbox's --reach-limit). */
  reachLimit: number;
  /** Page size asked for; the service grants what it grants. */
  per: number;
  /** Pages one activity has in flight at once, and records read by id at once (default 4). */
  pagesInFlight?: number;
  /**
   * Pages one activity reads before handing its cursor back (default 16): fewer round trips
   * through the workflow, each of which drains the pages in flight.
   */
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

const passName = (subjects: readonly MirrorSubject[], mode: MirrorMode): string =>
  `${[...subjects].sort().join('+')}:${mode}`;

function gapLine(resource: string, gap: PlanGap): string {
  const query = Object.entries(gap.query)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return `${resource}: ${gap.count} unreachable (${gap.reason.replace('_', ' ')}${query ? `; ${query}` : ''})`;
}

export interface PageInput extends MirrorTarget {
  generation: number;
  partition: Pick<PartitionState, 'key' | 'subject' | 'spec' | 'cursor'>;
  /** Expected records of each finished partition (lead bookings need the leads' total). */
  expectedOf: Record<string, number>;
}

export interface PageOutput {
  cursor: unknown;
  done: boolean;
  expected: number;
  counts: Partial<MirrorCounts>;
  gaps: string[];
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

  /** Ids of `resource` the ledger has not seen in this pass (never seen, or seen before). */
  async function notSeenIn(
    at: WriteTarget & { destinationId: string },
    resource: Resource,
    generation: number,
    ids: readonly string[],
  ): Promise<string[]> {
    if (ids.length === 0) return [];
    const known = new Map(
      (await at.ledger.get(scopeOf(at, resource), ids)).map((e) => [e.id, e.generation]),
    );
    return ids.filter((id) => (known.get(id) ?? -1) < generation);
  }

  const idsOf = (records: readonly CanonicalRecord[], attribute: string): string[] => [
    ...new Set(
      records
        .map((r) => r.attributes[attribute] ?? r.relationships[attribute.replace(/_id$/, '')])
        .filter((v): v is string | number => typeof v === 'string' || typeof v === 'number')
        .map(String),
    ),
  ];

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
      const key: PassKey = {
        connectionId: input.connectionId,
        destination: at.destinationId,
        pass: passName(input.subjects, input.mode),
      };
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
     * Advances one partition by up to `pagesPerActivity` pages (one request each, a few in
     * flight at once), plus the reads by id those pages call for, writing what changed page
     * by page as the pages arrive.
     */
    async mirrorPage(input: PageInput): Promise<PageOutput> {
      const resource = (input.partition.spec as { resource: ListResource }).resource;
      const plan: PartitionPlan =
        input.partition.cursor === null
          ? createPlan(resource, { per: deps.per, reachLimit: deps.reachLimit })
          : partitionPlanSchema.parse(input.partition.cursor);
      const [at, client] = await Promise.all([open(input), deps.clientFor(input.connectionId)]);
      const ctx = Context.current();
      let pages = 0;
      let requests = 0;
      let read = 0;
      const written: WriteCounts = { written: 0, unchanged: 0 };

      // Leads only their bookings reveal, and the events bookings name, are read by id; once
      // per activity, though pages in flight together may name the same one.
      const asked = new Set<string>();
      const byId = async (
        records: CanonicalRecord[],
        target: Resource,
        wanted: string[],
      ): Promise<void> => {
        const ids = wanted.filter((id) => !asked.has(`${target}:${id}`));
        for (const id of ids) asked.add(`${target}:${id}`);
        const got = await readRecords(client, target, ids, { concurrency: lanes });
        requests += got.requests;
        read += got.reads.length;
        for (const r of got.reads) records.push(r.record, ...r.included);
      };
      // Each page is written as soon as it arrives, while the next ones are being fetched.
      const onPage = async (page: FetchedPage): Promise<void> => {
        pages += 1;
        requests += 1;
        read += page.records.length;
        const records = [...page.records, ...page.included];
        if (resource === 'lead_bookings') {
          const leads = idsOf(page.records, 'lead_id');
          await byId(records, 'leads', await notSeenIn(at, 'leads', input.generation, leads));
        } else if (resource === 'event_bookings') {
          const bookings = page.records;
          let wanted = idsOf(bookings, 'event_id');
          if (input.mode === 'incremental') {
            // Only the events whose bookings are new or changed, and those never mirrored.
            const verdicts = await at.ledger.classify(
              scopeOf(at, 'event_bookings'),
              bookings.map((b) => ({ id: b.id, hash: b.hash })),
            );
            const moved = new Set(
              idsOf(
                bookings.filter((_, i) => verdicts[i]?.state !== 'unchanged'),
                'event_id',
              ),
            );
            const known = new Set(
              (await at.ledger.get(scopeOf(at, 'events'), wanted)).map((e) => e.id),
            );
            wanted = wanted.filter((id) => moved.has(id) || !known.has(id));
          }
          await byId(records, 'events', await notSeenIn(at, 'events', input.generation, wanted));
        }
        const counts = await writeRecords(at, input.generation, records);
        written.written += counts.written;
        written.unchanged += counts.unchanged;
        ctx.heartbeat();
      };
      try {
        await drivePlan(client, plan, {
          concurrency: lanes,
          maxPages: pagesPerActivity,
          onPage,
          // A cancelled pass stops at the pages in flight rather than the activity's end.
          signal: ctx.cancellationSignal,
        });
      } catch (error) {
        if (!(error instanceof PlanStuckError)) throw error;
        throw ApplicationFailure.create({
          type: 'PlanStuck',
          message: error.message,
          nonRetryable: true,
        });
      }

      const done = planComplete(plan);
      const report = planReport(plan);
      const expected = report.totalCount ?? 0;
      let unreachable = 0;
      const gaps: string[] = [];
      if (done) {
        gaps.push(...report.gaps.map((g) => gapLine(resource, g)));
        // Exact: what the service counts minus the distinct records this pass reached.
        const reached = (r: Resource) => at.ledger.countSeen(scopeOf(at, r), input.generation);
        unreachable += Math.max(0, expected - (await reached(resource)));
        if (resource === 'lead_bookings') {
          const leadsExpected = input.expectedOf.leads ?? 0;
          const leadsMissing = Math.max(0, leadsExpected - (await reached('leads')));
          unreachable += leadsMissing;
          if (leadsMissing > 0) {
            gaps.push(
              `leads: ${leadsMissing} of ${leadsExpected} unreachable by any filter or booking date`,
            );
          }
        }
        // The leads' own count is settled with their bookings' (some leads come by id).
        if (resource === 'leads') unreachable = 0;
      }
      return {
        cursor: plan,
        done,
        expected,
        counts: {
          pages,
          requests,
          read,
          written: written.written,
          unchanged: written.unchanged,
          unreachable,
        },
        gaps,
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
    ): Promise<{ after: string | null; done: boolean; counts: Partial<MirrorCounts> }> {
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
        const ids = unseen.map((e) => e.id);
        const found: CanonicalRecord[] = [];
        const gone: string[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: lanes }, async () => {
            while (next < ids.length) {
              const id = ids[next++]!;
              const answer = await readRecord(client, resource, id);
              if (answer) found.push(answer.record, ...answer.included);
              else gone.push(id);
            }
          }),
        );
        Context.current().heartbeat();
        const written = await writeRecords(at, input.generation, found);
        if (gone.length > 0) {
          await at.destination.markDeleted(resource, gone);
          await at.ledger.markDeleted(scope, gone);
        }
        return {
          after: `${resource}|${ids[ids.length - 1]!}`,
          done: false,
          counts: {
            requests: ids.length,
            read: found.length,
            written: written.written,
            unchanged: written.unchanged,
            deleted: gone.length,
          },
        };
      }
      return { after: null, done: true, counts: {} };
    },

    /** Closes a pass: a complete one is recorded; an interrupted one stays open, deleting nothing. */
    async finishMirrorPass(
      input: MirrorTarget & { subjects: MirrorSubject[]; generation: number; complete: boolean },
    ): Promise<void> {
      if (!input.complete) return;
      const at = await open(input);
      await at.ledger.completePass(
        {
          connectionId: input.connectionId,
          destination: at.destinationId,
          pass: passName(input.subjects, input.mode),
        },
        input.generation,
      );
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
