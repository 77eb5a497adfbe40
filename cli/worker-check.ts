import type { Client } from '@temporalio/client';
import { livePollers } from '../worker/worker-identity.js';
import type { Config } from '../config/index.js';
import { UserError } from './errors.js';
import { describeWorkflow } from './workflow-describe.js';

/**
 * Commands that start workflows, send updates or run queries wait for a worker, forever
 * when there is none. Asking the task queue first turns that silent wait into one line.
 */
export async function requireWorker(
  client: Client,
  config: Config,
  taskQueue: string = config.temporal.taskQueue,
): Promise<void> {
  const { namespace, address } = config.temporal;
  const alive = (await livePollers(client, namespace, taskQueue)).length > 0;
  if (alive) return;
  if (taskQueue === config.temporal.taskQueue) {
    throw new UserError(
      `no worker polls task queue '${taskQueue}' on ${address}; start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again`,
    );
  }
  throw new UserError(
    `no worker polls task queue '${taskQueue}' on ${address}, where this workflow runs (this deployment's queue is '${config.temporal.taskQueue}'); start one there with 'TEMPORAL_TASK_QUEUE=${taskQueue} ebsync worker', then run this again`,
  );
}

/** The task queue workflow `workflowId` runs on; null when it is not running or not there. */
export async function runningTaskQueueOf(
  client: Client,
  workflowId: string,
): Promise<string | null> {
  const description = await describeWorkflow(client, workflowId);
  return description?.status.name === 'RUNNING' ? description.taskQueue : null;
}

/**
 * A running workflow stays on the task queue it started on, which may not be this
 * deployment's (another TEMPORAL_TASK_QUEUE started it): an update or query to it waits for
 * a worker on that queue, so that queue is the one to check.
 */
export async function requireWorkerOf(
  client: Client,
  config: Config,
  workflowId: string,
): Promise<void> {
  const taskQueue = await runningTaskQueueOf(client, workflowId);
  if (taskQueue !== null) await requireWorker(client, config, taskQueue);
}
