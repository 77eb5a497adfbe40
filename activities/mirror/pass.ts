import { withServiceFailures } from '../failures.js';
import { beatingWhileAlive } from '../heartbeats.js';
import { createFinishPass } from './finish-pass.js';
import { createMirrorPage } from './mirror-page.js';
import { passTools, type MirrorDeps } from './pass-tools.js';
import { createPlanPass } from './plan-pass.js';
import { createProbeIds } from './probe-ids.js';
import { createSweepDeletions } from './sweep-deletions.js';

export type { MirrorDeps, MirrorTarget } from './pass-tools.js';
export type { PageInput, PageOutput } from './mirror-page.js';
export { SUBJECT_RESOURCES } from './sweep-deletions.js';

/**
 * The mirror's activities, one file each: a pass is planned (plan-pass.ts), read a slice of a
 * partition at a time (mirror-page.ts), the lead ids its lists skipped read by id
 * (probe-ids.ts), swept for deletions (sweep-deletions.ts) and closed
 * (finish-pass.ts). Service, store and destination errors leave them as failures that say
 * whether to retry.
 */
export function createMirrorActivities(deps: MirrorDeps) {
  const tools = passTools(deps);
  return {
    planMirrorPass: withServiceFailures(beatingWhileAlive(createPlanPass(tools))),
    mirrorPage: withServiceFailures(beatingWhileAlive(createMirrorPage(tools))),
    probeLeadIds: withServiceFailures(beatingWhileAlive(createProbeIds(tools))),
    sweepDeletions: withServiceFailures(beatingWhileAlive(createSweepDeletions(tools))),
    finishMirrorPass: withServiceFailures(beatingWhileAlive(createFinishPass(tools))),
  };
}
