import type { PayloadCodec } from '@temporalio/common';
import { createConnectionActivities, type ConnectionActivityDeps } from './connections.js';
import { createHealthActivities, type HealthDeps } from './health.js';
import { createDrainActivities, type DrainDeps } from './mirror/drain-inbox.js';
import { createMirrorActivities } from './mirror/pass.js';
import { createRecordActivities, type HandOverDeps } from './mirror/refresh-record.js';
import type { AutomationStore } from '../store/automation-endpoints.js';

export type ActivityDeps = HealthDeps &
  ConnectionActivityDeps & {
    mirror: DrainDeps & Pick<HandOverDeps, 'wakeDrain'>;
    automations?: AutomationStore;
    /** Seals the changes kept for automation endpoints (the payload codec). */
    codec: PayloadCodec;
  };

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  const kept = { inbox: () => deps.mirror.inbox(), codec: deps.codec };
  return {
    ...createHealthActivities(deps),
    ...createConnectionActivities(deps),
    ...createMirrorActivities(deps.mirror),
    ...createDrainActivities(
      deps.mirror,
      deps.automations ? { store: deps.automations, codec: deps.codec } : undefined,
    ),
    ...createRecordActivities(deps.mirror, deps.automations, kept),
  };
}

export type Activities = ReturnType<typeof createActivities>;
