import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { Client } from '../../api/client.js';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { passKeyOf } from '../../activities/mirror/pass-tools.js';
import { savedPlan } from '../../activities/mirror/plan-checkpoints.js';
import { SUBJECT_RESOURCES } from '../../activities/mirror/sweep-deletions.js';
import { emptyProbe, type IdProbe } from '../../workflows/mirror-types.js';
import type { Destination } from '../../destinations/destination.js';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { recordHash, type Resource, type Scalar } from '../../records/canonical.js';
import { planReport, type PartitionPlan, type PlanReport } from '../../records/partition-plan.js';
import { openLedger } from '../../store/open-ledger.js';
import type {
  MirrorMode,
  MirrorSubject,
  PartitionState,
  PartitionTally,
} from '../../workflows/mirror-types.js';

/**
 * A whole mirror pass in this process, without a Temporal server: the mirror's own activities
 * (activities/mirror/pass.ts) called in the order the mirror workflow calls them (plan, each
 * partition's slices until done, the deletion sweep of a full pass, finish), each in Temporal's
 * activity environment, against a fresh SQLite store and SQLite destination in a temp dir. The
 * partitions are read one after another (the workflow reads up to four at once: what each reads
 * is the same). For tests and benchmarks that measure what a pass reaches and asks for.
 */

export interface DriveOptions {
  /** A client of the service (the pass's only way to it). */
  client: Client;
  /**
   * The client an activity gets when it asks, where the pass's credentials change under it
   * (default: always `client`; only `client`'s requests are counted).
   */
  clientNow?: () => Client;
  /** MirrorDeps.credentialsReplaced (absent: the credentials never change). */
  credentialsReplaced?: () => Promise<boolean>;
  subjects: MirrorSubject[];
  /** The setting the plans start from (EBS_REACH_LIMIT). */
  reachLimit: number;
  per: number;
  minYield?: number;
  /** Pages in flight at first, and at most (MirrorDeps; defaults 4 and 16). */
  pagesInFlight?: number;
  maxPagesInFlight?: number;
  /** How long one activity reads records by id (MirrorDeps.readByIdMs). */
  readByIdMs?: number;
  /** How long one activity starts pages (MirrorDeps.sliceMs). */
  sliceMs?: number;
  /** Default full. */
  mode?: MirrorMode;
  /**
   * An activity that fails retryably is called again, up to this many times in a row, as the
   * workflow's retry policy would (default 0: the first failure ends the drive).
   */
  retries?: number;
  /** Records a slice writes together (MirrorDeps.writeBatch). */
  writeBatch?: number;
  /** The SQLite destination as the pass sees it, changed (its capabilities, its timing). */
  destinationAs?: (real: Destination) => Destination;
}

export interface DrivenPartition {
  /** The store's running counts of the partition's activities. */
  tally: PartitionTally;
  /** total_count as the pass settled it. */
  expected: number;
  /** The partition's plan as the store kept it, and its report. */
  plan: PartitionPlan;
  report: PlanReport;
  /** The mirrorPage activities it took. */
  activities: number;
  /** The service's refusal, when it settled the partition unread. */
  forbidden?: string;
}

export interface DrivenPass {
  partitions: Record<string, DrivenPartition>;
  /** What finishMirrorPass counted unreachable over all lists, and the gap lines of the pass. */
  unreachable: number;
  gaps: string[];
  /** Records the ledger saw in this pass, per table of the subjects. */
  seen: Partial<Record<Resource, number>>;
  /** Every record the destination was given: table → id → hashes of what was written. */
  written: Map<Resource, Map<string, Set<string>>>;
  /** Ids written while each partition was read: partition key → table → ids. */
  writtenIn: Map<string, Map<Resource, Set<string>>>;
  /** Requests the pass sent, by operation of the route table (`leads.list`, `leads.get`…). */
  requests: Record<string, number>;
  /** The read by id of the lead ids the lists skipped, as it ended (when leads were read). */
  probe: IdProbe | undefined;
  /** Activities called again after a retryable failure (DriveOptions.retries). */
  retried: number;
}

const add = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
};

/** The destination, with each upserted record noted (its content hash, and when). */
function watched(real: Destination, note: (resource: Resource, id: string, hash: string) => void) {
  const destination: Destination = {
    describe: () => real.describe(),
    capabilities: real.capabilities,
    ensureSchema: (tables) => real.ensureSchema(tables),
    ensureTable: (resource) => real.ensureTable(resource),
    async upsert(resource, records, at) {
      const result = await real.upsert(resource, records, at);
      for (const r of records) {
        const raw = r.raw as {
          attributes: Record<string, Scalar>;
          relationships: Record<string, string | string[] | null>;
        };
        note(
          resource,
          r.id,
          recordHash({
            resource,
            id: r.id,
            attributes: raw.attributes,
            relationships: raw.relationships,
          }),
        );
      }
      return result;
    },
    markDeleted: (resource, ids, at) => real.markDeleted(resource, ids, at),
    close: () => real.close(),
  };
  return destination;
}

export async function driveMirrorPass(options: DriveOptions): Promise<DrivenPass> {
  const dir = mkdtempSync(join(tmpdir(), 'ebsync-drive-'));
  const ledger = await openLedger(`sqlite:${join(dir, 'store.db')}`);
  const written = new Map<Resource, Map<string, Set<string>>>();
  const writtenIn = new Map<string, Map<Resource, Set<string>>>();
  let reading = 'plan';
  const opened = openDestination(databaseOpeners, `sqlite:${join(dir, 'mirror.db')}`);
  const mirror = options.destinationAs?.(opened) ?? opened;
  const destination = watched(mirror, (r, id, h) => {
    add(
      add(written, r, () => new Map<string, Set<string>>()),
      id,
      () => new Set<string>(),
    ).add(h);
    add(
      add(writtenIn, reading, () => new Map<Resource, Set<string>>()),
      r,
      () => new Set(),
    ).add(id);
  });
  const requests: Record<string, number> = {};
  const transport = options.client.transport;
  // Counted at the client, and put back (bound, as it was) once the pass ends.
  const call = transport.call.bind(transport);
  transport.call = (operation, request) => {
    requests[operation] = (requests[operation] ?? 0) + 1;
    return call(operation, request);
  };
  const activities = createMirrorActivities({
    clientFor: () => Promise.resolve(options.clientNow?.() ?? options.client),
    ...(options.credentialsReplaced ? { credentialsReplaced: options.credentialsReplaced } : {}),
    ledger: () => Promise.resolve(ledger),
    destination: () => Promise.resolve(destination),
    reachLimit: options.reachLimit,
    per: options.per,
    ...(options.minYield !== undefined ? { minYield: options.minYield } : {}),
    ...(options.pagesInFlight !== undefined ? { pagesInFlight: options.pagesInFlight } : {}),
    ...(options.maxPagesInFlight !== undefined
      ? { maxPagesInFlight: options.maxPagesInFlight }
      : {}),
    ...(options.readByIdMs !== undefined ? { readByIdMs: options.readByIdMs } : {}),
    ...(options.sliceMs !== undefined ? { sliceMs: options.sliceMs } : {}),
    ...(options.writeBatch !== undefined ? { writeBatch: options.writeBatch } : {}),
  });
  const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  let retried = 0;
  /**
   * One activity call in an activity's context (heartbeats, its logger), as a worker runs it,
   * called again after a retryable failure while DriveOptions.retries allows.
   */
  const inActivity = async <T>(work: () => Promise<T>): Promise<T> => {
    for (let failed = 0; ; failed += 1) {
      try {
        return await env.run(work);
      } catch (error) {
        const retryable = error instanceof ApplicationFailure && !error.nonRetryable;
        if (!retryable || failed >= (options.retries ?? 0)) throw error;
        retried += 1;
      }
    }
  };
  const target = {
    connectionId: 'driven',
    destination: destination.describe().id,
    mode: options.mode ?? 'full',
  };
  const { subjects } = options;
  try {
    const opened = await inActivity(() => activities.planMirrorPass({ ...target, subjects }));
    const { generation } = opened;
    const partitions: PartitionState[] = opened.partitions;
    const gaps = [...opened.gaps];
    let probe: IdProbe | undefined;
    const expectedOf = () => Object.fromEntries(partitions.map((p) => [p.key, p.expected]));
    const activityCount = new Map<string, number>();
    for (const p of partitions) {
      if (p.after !== undefined && !partitions.some((q) => q.key === p.after && q.done)) {
        throw new Error(`partition ${p.key} is listed before ${p.after}, which it reads after`);
      }
      reading = p.key;
      while (!p.done) {
        activityCount.set(p.key, (activityCount.get(p.key) ?? 0) + 1);
        const page = await inActivity(() =>
          activities.mirrorPage({
            ...target,
            generation,
            subjects,
            partition: {
              key: p.key,
              subject: p.subject,
              spec: p.spec,
              cursor: p.cursor,
              ...(p.tally ? { tally: p.tally } : {}),
            },
            expectedOf: expectedOf(),
          }),
        );
        p.cursor = page.cursor;
        p.done = page.done;
        p.expected = page.expected;
        p.tally = page.tally;
        if (page.forbidden !== undefined) p.forbidden = page.forbidden;
        gaps.push(...page.gaps);
      }
      // As the workflow does: the lead ids the list skipped, read by id before the bookings.
      if (p.key === 'leads') {
        reading = 'probe';
        let now: IdProbe = emptyProbe();
        while (!now.done) {
          const input = { ...target, generation, expected: p.expected, probe: now };
          now = (await inActivity(() => activities.probeLeadIds(input))).probe;
        }
        probe = now;
      }
    }
    reading = 'sweep';
    for (let after: string | null = null; target.mode === 'full';) {
      const sweep = await inActivity(() =>
        activities.sweepDeletions({ ...target, subjects, generation, after }),
      );
      if (sweep.done) break;
      after = sweep.after;
    }
    // The plans as the store kept them: a complete pass clears its cursors.
    const at = { connectionId: target.connectionId, destinationId: target.destination };
    const key = passKeyOf(at, subjects, target.mode);
    const driven: Record<string, DrivenPartition> = {};
    for (const p of partitions) {
      const plan = await savedPlan(ledger, key, generation, p.key);
      if (!plan || !p.tally) throw new Error(`partition ${p.key}: the store kept no cursor`);
      driven[p.key] = {
        tally: p.tally,
        expected: p.expected,
        plan,
        report: planReport(plan),
        activities: activityCount.get(p.key) ?? 0,
        ...(p.forbidden !== undefined ? { forbidden: p.forbidden } : {}),
      };
    }
    const final = await inActivity(() =>
      activities.finishMirrorPass({
        ...target,
        subjects,
        generation,
        complete: true,
        expectedOf: expectedOf(),
      }),
    );
    gaps.push(...final.gaps);

    const seen: Partial<Record<Resource, number>> = {};
    for (const resource of subjects.flatMap((s) => SUBJECT_RESOURCES[s])) {
      seen[resource] = await ledger.countSeen(
        { connectionId: target.connectionId, destination: target.destination, resource },
        generation,
      );
    }
    return {
      partitions: driven,
      unreachable: final.unreachable,
      gaps,
      seen,
      written,
      writtenIn,
      requests,
      probe,
      retried,
    };
  } finally {
    transport.call = call;
    await destination.close();
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
