import { createConnectionActivities, type ConnectionActivityDeps } from './connections.js';
import { createHealthActivities, type HealthDeps } from './health.js';

export type ActivityDeps = HealthDeps & ConnectionActivityDeps;

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createHealthActivities(deps),
    ...createConnectionActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
