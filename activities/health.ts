import { hostname } from 'node:os';

export interface HealthDeps {
  version: string;
  startedAt: number;
}

export function createHealthActivities(deps: HealthDeps) {
  return {
    reportWorkerHealth(): Promise<{
      version: string;
      hostname: string;
      pid: number;
      uptimeSeconds: number;
    }> {
      return Promise.resolve({
        version: deps.version,
        hostname: hostname(),
        pid: process.pid,
        uptimeSeconds: Math.round((Date.now() - deps.startedAt) / 1000),
      });
    },
  };
}
