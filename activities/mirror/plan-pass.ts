import type { Resource } from '../../destinations/record.js';
import { ALL_TABLES } from '../../destinations/tables.js';
import type { ListResource } from '../../records/partition-plan.js';
import type { MirrorCounts, MirrorSubject, PartitionState } from '../../workflows/mirror-types.js';
import { forgetChangedTables } from './write-records.js';
import { claimSoleWriter } from './sole-writer.js';
import { passKeyOf, type MirrorTarget, type PassTools } from './pass-tools.js';

/**
 * The lists each subject reads, in order: lead bookings after leads (they read the rest by
 * id). Event bookings name the events, each read by id and counted by no list (`uncounted`).
 */
const LISTS: Record<
  MirrorSubject,
  { key: ListResource; after?: ListResource; uncounted?: true }[]
> = {
  leads: [{ key: 'leads' }, { key: 'lead_bookings', after: 'leads' }],
  events: [{ key: 'event_bookings', uncounted: true }],
  appointments: [{ key: 'appointments' }],
};

/** The tables each subject's pass writes (events come by the ids their bookings name). */
const WRITTEN: Record<MirrorSubject, Resource[]> = {
  leads: ['leads', 'lead_bookings'],
  events: ['event_bookings', 'events'],
  appointments: ['appointments'],
};

export function createPlanPass({ open, scopeOf }: PassTools) {
  /** Opens a pass: its generation in the ledger, the destination's tables, its partitions. */
  async function planMirrorPass(
    input: MirrorTarget & { subjects: MirrorSubject[]; rewrite?: boolean },
  ): Promise<{
    passId: string;
    generation: number;
    partitions: PartitionState[];
    counts: Partial<MirrorCounts>;
    gaps: string[];
  }> {
    const at = await open(input);
    // Before the schema: a column another connection's pass added would leave the writer's
    // hashes standing (forgetChangedTables forgets the caller's), and its rows never filled.
    await claimSoleWriter(at.ledger, at.destination, at.connectionId);
    await forgetChangedTables(at, await at.destination.ensureSchema(ALL_TABLES), ALL_TABLES);
    if (input.rewrite) {
      // Before the pass reads anything: every record it reads then compares changed.
      for (const resource of new Set(input.subjects.flatMap((s) => WRITTEN[s]))) {
        await at.ledger.forgetHashes(scopeOf(at, resource));
      }
    }
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
        ...(list.uncounted ? { uncounted: true as const } : {}),
      })),
    );
    return {
      passId: `${key.pass}#${pass.generation}`,
      generation: pass.generation,
      partitions,
      counts: {},
      gaps: [],
    };
  }
  return planMirrorPass;
}
