import type { WorkflowHandle } from '@temporalio/client';
import { mirrorProgressQuery } from '../../workflows/mirror-types.js';
import type { mirrorWorkflow } from '../../workflows/mirror.js';
import type { MirrorProgress } from '../../workflows/mirror-types.js';

/**
 * The pass's progress once `until` holds (or the pass ended), asking again while no worker answers (after a kill
 * the successor does; while the server is down nobody does).
 */
export async function progressOf(
  handle: WorkflowHandle<typeof mirrorWorkflow>,
  until: (p: MirrorProgress) => boolean,
): Promise<MirrorProgress> {
  for (;;) {
    const p = await handle.query(mirrorProgressQuery).catch(() => undefined);
    // A pass that ended before `until` held is returned as it is, for the caller to judge.
    if (p && (until(p) || p.phase === 'done' || p.phase === 'failed')) return p;
    await new Promise((r) => setTimeout(r, 250));
  }
}
