import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { livePollers, POLLER_FRESH_MS } from '../worker/worker-identity.js';
import type { Config } from '../config/index.js';
import { healthCheckWorkflow } from '../workflows/health.js';
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
  const alive = (await livePollers(client, config.temporal.namespace, taskQueue)).length > 0;
  if (alive) return;
  throw new UserError(`${noWorkerLine(config, taskQueue)}, then run this again`);
}

/** "no worker polls task queue 'q' on host:7233…; start one with …" (the caller ends it). */
function noWorkerLine(config: Config, taskQueue: string, why = ''): string {
  const { address } = config.temporal;
  if (taskQueue === config.temporal.taskQueue) {
    return `no worker polls task queue '${taskQueue}' on ${address}${why}; start one with 'npm start' (Temporal and a worker) or 'ebsync worker'`;
  }
  return `no worker polls task queue '${taskQueue}' on ${address}, where this workflow runs (this deployment's queue is '${config.temporal.taskQueue}')${why}; start one there with 'TEMPORAL_TASK_QUEUE=${taskQueue} ebsync worker'`;
}

/** A query that no worker has answered in this long has its task queue probed (watchWorker). */
export const PROBE_AFTER_MS = 1_000;
/** How long a live worker may take to pick up a new workflow's first task. */
const PICKUP_MS = 3_000;

/**
 * Whether a worker picks up a new workflow's first task from `taskQueue` within PICKUP_MS. A
 * new workflow's task goes to the queue itself (no worker's cache holds it), where every live
 * worker polls without pause: one takes it within milliseconds. A probe no worker took is
 * terminated; one taken runs on as `ebsync doctor`'s does.
 */
async function workerTakesTasks(
  client: Client,
  taskQueue: string,
  signal: AbortSignal,
): Promise<boolean> {
  const { PENDING_WORKFLOW_TASK_STATE_STARTED } =
    proto.temporal.api.enums.v1.PendingWorkflowTaskState;
  const handle = await client.workflow.start(healthCheckWorkflow, {
    taskQueue,
    workflowId: `ebsync-worker-probe-${randomUUID()}`,
    workflowExecutionTimeout: '1 minute',
  });
  const until = Date.now() + PICKUP_MS;
  for (;;) {
    const d = await handle.describe();
    const taken =
      d.status.name !== 'RUNNING' ||
      d.historyLength > 2 ||
      d.raw.pendingWorkflowTask?.state === PENDING_WORKFLOW_TASK_STATE_STARTED;
    if (taken) return true;
    // The call was answered meanwhile, or the wait is over.
    if (signal.aborted || Date.now() >= until) break;
    await sleep(100);
  }
  await handle.terminate('no worker took this probe').catch(() => undefined);
  return false;
}

/** The line a caller says when watchWorker finds no worker (its words end it). */
export type NoWorker = (line: string) => Error;

/**
 * `call` (queries of workflows on `taskQueue`, under `signal`), failed at once when no worker
 * runs there. The poller check (requireWorker) passes for a worker stopped a minute ago: the
 * server lists pollers for minutes after they went away, and a live idle worker's last poll is
 * as old (a poll lasts a minute). So such a query waited out its whole deadline (10 s, 30 s)
 * for an answer none gives. A query not answered within PROBE_AFTER_MS (a worker answers in
 * milliseconds) has the queue probed with a new workflow; none taking it within PICKUP_MS ends
 * the wait with `noWorker`'s line. The probe costs nothing while workers answer.
 */
export async function watchWorker<T>(
  client: Client,
  config: Config,
  taskQueue: () => Promise<string>,
  call: (signal: AbortSignal) => Promise<T>,
  noWorker: NoWorker = (line) => new UserError(`${line}, then run this again`),
): Promise<T> {
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const gone = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void (async () => {
        const queue = await taskQueue();
        if ((await workerTakesTasks(client, queue, stop.signal)) || stop.signal.aborted) return;
        reject(
          noWorker(
            noWorkerLine(
              config,
              queue,
              ` (one polled it in the last ${POLLER_FRESH_MS / 60_000} minutes, but none took a new workflow within ${PICKUP_MS / 1000} s)`,
            ),
          ),
        );
        stop.abort();
      })().catch(() => undefined);
    }, PROBE_AFTER_MS);
  });
  try {
    return await Promise.race([call(stop.signal), gone]);
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
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
