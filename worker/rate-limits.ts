import type { Client, WorkflowService } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Refusal } from '../activities/request-pacing.js';
import { rateLimitedSignal, type RateLimitSignal } from '../workflows/rate-limit-types.js';
import { connectionWorkflowId } from '../workflows/connection-types.js';

/**
 * Sets the per-connection rate on a task queue (DESIGN decision 7): every activity that calls
 * the service carries its connection as fairness key, and the server dispatches at most
 * `rate × weight` of one key's activities a second, to all workers together, in weighted
 * round-robin between connections. An activity makes one request or more, so this bounds a
 * connection's activities; its requests are spaced by the store's request slots
 * (activities/request-pacing.ts), because the server lets an idle key start about a second's
 * worth of activities at once (docs/rate-limits.md). Idempotent; the last worker to start
 * sets it. `perSecond` 0 removes the limit.
 */
export async function setConnectionRate(
  service: WorkflowService,
  target: { namespace: string; taskQueue: string; identity: string },
  perSecond: number,
): Promise<void> {
  await service.updateTaskQueueConfig({
    namespace: target.namespace,
    identity: target.identity,
    taskQueue: target.taskQueue,
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    updateFairnessKeyRateLimitDefault:
      perSecond > 0
        ? {
            rateLimit: { requestsPerSecond: perSecond },
            reason: `ebsync: EBS_RATE_LIMIT=${perSecond}`,
          }
        : { reason: 'ebsync: EBS_RATE_LIMIT=0' },
  });
}

/** The requests a second a task queue holds each connection to, or null when it has none. */
export async function connectionRateOf(
  service: WorkflowService,
  target: { namespace: string; taskQueue: string },
): Promise<number | null> {
  const described = await service.describeTaskQueue({
    namespace: target.namespace,
    taskQueue: { name: target.taskQueue },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    reportConfig: true,
  });
  const activities = described.config?.fairnessKeysRateLimitDefault?.rateLimit?.requestsPerSecond;
  return typeof activities === 'number' ? activities : null;
}

/** A signal to one workflow goes out at most this often from one worker. */
const SIGNAL_EVERY_MS = 1_000;

/**
 * When a signal last went to each workflow. Entries older than a signal interval say nothing,
 * so they are dropped once there are many: a worker that runs for months sees a new mirror
 * workflow id every pass.
 */
class SentTimes {
  private readonly at = new Map<string, number>();

  /** Milliseconds until a signal may go to workflowId again (≤ 0: now). */
  waitFor(workflowId: string, now: number): number {
    const last = this.at.get(workflowId);
    return last === undefined ? 0 : last + SIGNAL_EVERY_MS - now;
  }

  mark(workflowId: string, now: number): void {
    this.at.set(workflowId, now);
    if (this.at.size <= 256) return;
    for (const [id, last] of this.at) if (now - last >= SIGNAL_EVERY_MS) this.at.delete(id);
  }
}

/**
 * Tells workflows about the service turning a connection away for its rate, from every
 * request of every activity (activities/request-pacing.ts), whether or not the refusal
 * fails the activity (a mirror activity that read some pages keeps them and hands its cursor
 * back). The activity's own workflow is told when it paces the connection (its activities
 * carry the connection as fairness key): it lowers the connection's pace
 * (`workflows/rate-limit.ts`). The connection's workflow is told always: it keeps the last
 * signal for `ebsync connections` and counts the refusals per minute for the status.
 */
export function rateLimitReporter(
  client: Client,
  onError: (error: unknown) => void = () => undefined,
  options: { unlimited?: boolean } = {},
): (refusal: Refusal) => void {
  const unlimited = options.unlimited === true ? { unlimited: true } : {};
  const signal = (workflowId: string, value: RateLimitSignal): void =>
    void client.workflow
      .getHandle(workflowId)
      .signal(rateLimitedSignal, { ...value, ...unlimited })
      .catch(onError);
  // The pace: refusals within a second of the last signal are one cut, so they are dropped.
  const paceSent = new SentTimes();
  const pace = (workflowId: string, value: RateLimitSignal): void => {
    if (paceSent.waitFor(workflowId, value.at) > 0) return;
    paceSent.mark(workflowId, value.at);
    signal(workflowId, value);
  };
  // The count: refusals within a second are held and go with the next signal, or after that
  // second, so every refusal is counted once and a burst is still one signal a second.
  const countSent = new SentTimes();
  const held = new Map<string, { last: RateLimitSignal; count: number; timer?: NodeJS.Timeout }>();
  const flush = (workflowId: string): void => {
    const entry = held.get(workflowId);
    if (!entry) return;
    held.delete(workflowId);
    clearTimeout(entry.timer);
    countSent.mark(workflowId, Date.now());
    signal(workflowId, { ...entry.last, count: entry.count });
  };
  const count = (workflowId: string, value: RateLimitSignal): void => {
    const entry = held.get(workflowId) ?? { last: value, count: 0 };
    entry.last = value;
    entry.count += 1;
    held.set(workflowId, entry);
    const wait = countSent.waitFor(workflowId, value.at);
    if (wait <= 0) flush(workflowId);
    else if (!entry.timer) {
      entry.timer = setTimeout(() => flush(workflowId), wait);
      entry.timer.unref();
    }
  };
  return ({ connectionId, pacedWorkflowId, signal: value }) => {
    const connection = connectionWorkflowId(connectionId);
    if (pacedWorkflowId && pacedWorkflowId !== connection) pace(pacedWorkflowId, value);
    count(connection, value);
  };
}
