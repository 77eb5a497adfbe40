import type { Resource } from '../../destinations/record.js';
import { TABLES } from '../../destinations/tables.js';
import { gapLines, type IdReadSummary } from '../../records/plan-gaps.js';
import type { MirrorSubject } from '../../workflows/mirror-types.js';
import { passKeyOf, type MirrorTarget, type PassTools } from './pass-tools.js';
import { savedPlan } from './plan-checkpoints.js';
import { SUBJECT_RESOURCES } from './sweep-deletions.js';

export function createFinishPass({ open, scopeOf }: PassTools) {
  /**
   * Closes a pass: a complete one is recorded, with its final count of records the service
   * has and the pass did not reach (after the deletion sweep, which reads by id every
   * record the ledger knows and the lists missed); an interrupted one stays open, deleting
   * nothing.
   */
  async function finishMirrorPass(
    input: MirrorTarget & {
      subjects: MirrorSubject[];
      generation: number;
      complete: boolean;
      /** The service's total_count of each list (partition key → count). */
      expectedOf?: Record<string, number>;
      /** What the read of lead ids by id found (the workflow's probe), when it ran. */
      probe?: IdReadSummary;
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
        gaps.push(...gapLines(list, plan?.gaps ?? [], missing, expected, input.probe));
      }
    }
    // A table made anew during the pass (its file or table removed, then written again by this
    // pass or a webhook batch) lacks the records this pass wrote into the old one before: the
    // pass read each once, so it ends incomplete, and the next pass writes them.
    for (const resource of input.subjects.flatMap((s) => SUBJECT_RESOURCES[s])) {
      const lost = await at.ledger.countForgottenSeen(scopeOf(at, resource), input.generation);
      if (lost === 0) continue;
      unreachable += lost;
      gaps.push(
        `${resource}: ${lost} records this pass wrote or found up to date are not in the destination, whose ${TABLES[resource].table} table was made anew during the pass (its file or table removed); the next pass writes them`,
      );
    }
    await at.ledger.completePass(key, input.generation);
    return { unreachable, gaps };
  }
  return finishMirrorPass;
}
