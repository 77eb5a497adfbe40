import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { createHealthActivities } from '../activities/health.js';

const { reportWorkerHealth } = proxyActivities<ReturnType<typeof createHealthActivities>>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export interface HealthReport {
  workflowId: string;
  taskQueue: string;
  worker: { version: string; hostname: string; pid: number; uptimeSeconds: number };
}

/** Round trip through a worker: proves the queue is polled and activities run. */
export async function healthCheckWorkflow(): Promise<HealthReport> {
  const info = workflowInfo();
  const worker = await reportWorkerHealth();
  return { workflowId: info.workflowId, taskQueue: info.taskQueue, worker };
}
