import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, sleep, startChild } from '@temporalio/workflow';
import { mirrorWorkflow } from './mirror.js';
import type { MirrorInput, MirrorSummary } from './mirror-types.js';

export interface ScheduledMirrorInput {
  mirror: MirrorInput;
  /** The id `ebsync sync` uses for this connection and destination (mirrorWorkflowId). */
  mirrorWorkflowId: string;
}

export type ScheduledMirrorResult =
  { outcome: 'mirrored'; summary: MirrorSummary } | { outcome: 'skipped'; reason: string };

/** How often an incremental run asks again whether the mirror it waits for has ended. */
const WAIT_FOR_RUNNING = '30 seconds';

/**
 * A schedule's action. It runs the mirror under the same workflow id as `ebsync sync`, so a
 * connection and destination never have two passes at once (they would share one ledger
 * pass) and `ebsync sync` attaches to a scheduled pass. When a mirror already runs there, a
 * full run is skipped (as the schedule's SKIP policy skips its own overlaps) and an
 * incremental one waits for it and then runs (as BUFFER_ONE does).
 */
export async function scheduledMirrorWorkflow(
  input: ScheduledMirrorInput,
): Promise<ScheduledMirrorResult> {
  for (;;) {
    try {
      const child = await startChild(mirrorWorkflow, {
        workflowId: input.mirrorWorkflowId,
        args: [input.mirror],
        // The mirror is the connection's one pass; ending this run must not end it.
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      return { outcome: 'mirrored', summary: await child.result() };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      if (input.mirror.mode === 'full') {
        return {
          outcome: 'skipped',
          reason: `a mirror of this connection and destination was running (${input.mirrorWorkflowId})`,
        };
      }
      await sleep(WAIT_FOR_RUNNING);
    }
  }
}
