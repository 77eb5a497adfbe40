import { z } from 'zod';
import type { Ledger, PassKey } from '../../store/ledger.js';
import type { PartitionTally } from '../../workflows/mirror-types.js';
import { partitionPlanSchema, type PartitionPlan } from '../../records/partition-plan.js';

/**
 * A partition's cursor lives in the store, not in workflow history (DESIGN decision 1): its
 * partition plan (queries, counts, filter values; it grows with every cut) and the running
 * counts of what its activities did. Each activity reads it, goes on from it and saves it
 * over the version it read, so a retry racing the attempt it replaced never undoes its work,
 * and counts follow the cursor: an attempt whose result was lost still counts once.
 */
const count = z.number().int().nonnegative().default(0);
const tallySchema = z.object({
  pages: count,
  requests: count,
  read: count,
  written: count,
  unchanged: count,
  again: count,
  refused: count,
  passedOver: count,
  withoutEmail: count,
});

const checkpointSchema = z.object({ plan: partitionPlanSchema, tally: tallySchema });

export interface PartitionCheckpoint {
  plan: PartitionPlan;
  tally: PartitionTally;
  /** The store's version of what was read (0: nothing saved yet). */
  version: number;
}

export const emptyTally = (): PartitionTally => ({
  pages: 0,
  requests: 0,
  read: 0,
  written: 0,
  unchanged: 0,
  again: 0,
  refused: 0,
  passedOver: 0,
  withoutEmail: 0,
});

/** Adds an activity's counts to a partition's running ones. */
export function addTally(into: PartitionTally, more: PartitionTally): void {
  for (const k of Object.keys(into) as (keyof PartitionTally)[]) into[k] += more[k];
}

/**
 * The partition's checkpoint of pass `generation`; on its first activity, the cursor a pass
 * carried from before cursors moved to the store, or else a new plan.
 */
export async function loadPartition(
  ledger: Ledger,
  key: PassKey,
  generation: number,
  partition: string,
  start: { carried: unknown; plan: () => PartitionPlan },
): Promise<PartitionCheckpoint> {
  const saved = await ledger.readCheckpoint(key, generation, partition);
  if (saved) return { ...checkpointSchema.parse(saved.checkpoint), version: saved.version };
  const plan =
    start.carried === null || start.carried === undefined
      ? start.plan()
      : partitionPlanSchema.parse(start.carried);
  return { plan, tally: emptyTally(), version: 0 };
}

/**
 * Saves over the version that was read; CheckpointConflictError (retryable) if it moved.
 * `state`: saved instead of the checkpoint's own plan and tally (progress within an activity,
 * with the cursor before it), the checkpoint keeping the version it is now at.
 */
export async function savePartition(
  ledger: Ledger,
  key: PassKey,
  generation: number,
  partition: string,
  checkpoint: PartitionCheckpoint,
  state: Pick<PartitionCheckpoint, 'plan' | 'tally'> = checkpoint,
): Promise<void> {
  checkpoint.version = await ledger.saveCheckpoint(
    key,
    generation,
    { plan: state.plan, tally: state.tally } as never,
    partition,
    { replaces: checkpoint.version },
  );
}

/** The plan of a partition as far as the store has it (after the pass, for its report). */
export async function savedPlan(
  ledger: Ledger,
  key: PassKey,
  generation: number,
  partition: string,
): Promise<PartitionPlan | undefined> {
  const saved = await ledger.readCheckpoint(key, generation, partition);
  return saved ? checkpointSchema.parse(saved.checkpoint).plan : undefined;
}
