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
  applyPage,
  createPlan,
  partitionPlanSchema,
  planComplete,
  planReport,
  readySteps,
  type ListResource,
  type PartitionPlan,
  type PlanGap,
} from './partition-plan.js';
import { readRecord, readRecords } from './records-by-id.js';
import { fetchPage } from './source-pages.js';
import { writeRecords, type WriteTarget } from './write-records.js';

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
  /** Pages one activity fetches at once, and records read by id at once. */
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
  const lanes = Math.max(1, deps.pagesPerActivity ?? 4);

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
     * Advances one partition by up to a few pages (one request each, fetched at once), plus
     * the reads by id those pages call for, and writes what changed.
     */
    async mirrorPage(input: PageInput): Promise<PageOutput> {
      const resource = (input.partition.spec as { resource: ListResource }).resource;
      const plan: PartitionPlan =
        input.partition.cursor === null
          ? createPlan(resource, { per: deps.per, reachLimit: deps.reachLimit })
          : partitionPlanSchema.parse(input.partition.cursor);
      const [at, client] = await Promise.all([open(input), deps.clientFor(input.connectionId)]);
      const ctx = Context.current();
      const steps = readySteps(plan, { max: lanes });
      if (steps.length === 0 && !planComplete(plan)) {
        throw ApplicationFailure.create({
          type: 'PlanStuck',
          message: `${resource}: the partition plan has nothing left to read but is not complete`,
          nonRetryable: true,
        });
      }
      const pages = await Promise.all(steps.map((step) => fetchPage(client, plan, step)));
      ctx.heartbeat();
      const records: CanonicalRecord[] = [];
      let read = 0;
      steps.forEach((step, i) => {
        const page = pages[i]!;
        applyPage(plan, step, page.summary);
        records.push(...page.records, ...page.included);
        read += page.records.length;
      });
      let requests = steps.length;

      // Leads only their bookings reveal, and the events bookings name, are read by id.
      const byId = async (target: Resource, ids: string[]): Promise<void> => {
        const got = await readRecords(client, target, ids, { concurrency: lanes });
        requests += got.requests;
        read += got.reads.length;
        for (const r of got.reads) records.push(r.record, ...r.included);
        ctx.heartbeat();
      };
      if (resource === 'lead_bookings') {
        const leads = idsOf(
          records.filter((r) => r.resource === 'lead_bookings'),
          'lead_id',
        );
        await byId('leads', await notSeenIn(at, 'leads', input.generation, leads));
      } else if (resource === 'event_bookings') {
        const bookings = records.filter((r) => r.resource === 'event_bookings');
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
        await byId('events', await notSeenIn(at, 'events', input.generation, wanted));
      }

      const written = await writeRecords(at, input.generation, records);
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
          pages: steps.length,
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
