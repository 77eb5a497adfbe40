import { createConnectionActivities, type ConnectionActivityDeps } from './connections.js';
import { createHealthActivities, type HealthDeps } from './health.js';
import { createMirrorActivities, type MirrorDeps } from './mirror/pass.js';
import { createRecordActivities } from './mirror/refresh-record.js';
import type { AutomationStore } from '../store/automation-endpoints.js';

export type ActivityDeps = HealthDeps &
  ConnectionActivityDeps & { mirror: MirrorDeps; automations?: AutomationStore };

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createHealthActivities(deps),
    ...createConnectionActivities(deps),
    ...createMirrorActivities(deps.mirror),
    ...createRecordActivities(deps.mirror, deps.automations),
  };
}

export type Activities = ReturnType<typeof createActivities>;
