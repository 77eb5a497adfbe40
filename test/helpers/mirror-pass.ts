import { createMirrorActivities, type MirrorDeps } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import type { MirrorInput, MirrorSummary } from '../../workflows/mirror-types.js';
import type { TemporalHarness } from './temporal.js';

/**
 * One mirror pass to its end on the shared dev server: a worker with these deps polls a task
 * queue of its own while the workflow runs, so passes of different tests never meet.
 */
export async function runMirrorPass(
  temporal: TemporalHarness,
  deps: MirrorDeps,
  input: MirrorInput,
  workflowIdPrefix: string,
): Promise<MirrorSummary> {
  const taskQueue = temporal.taskQueue();
  return temporal.withWorker(
    { taskQueue, activities: createMirrorActivities(deps), maxConcurrentActivityTaskExecutions: 8 },
    () =>
      temporal.client.workflow.execute(mirrorWorkflow, {
        taskQueue,
        workflowId: `${workflowIdPrefix}-${taskQueue}`,
        args: [input],
      }),
  );
}
