import { ApplicationFailure } from '@temporalio/common';
import type { Client, WorkflowService } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { rateLimitedSignal, type RateLimitSignal } from '../workflows/rate-limit.js';
import { connectionWorkflowId } from '../workflows/connection-types.js';

/**
 * List pages a mirror activity reads under a rate limit: one round, fetched at once, so each
 * activity makes this many list requests (fewer only at a list's end). The task queue is
 * given the rate in activities, `perSecond / PAGES_PER_PACED_ACTIVITY`. One page per
 * activity would be exact but reads a list one page per round trip through the workflow.
 */
export const PAGES_PER_PACED_ACTIVITY = 4;

/**
 * Sets the per-connection rate on a task queue (DESIGN decision 7): every activity that calls
 * the service carries its connection as fairness key, and the server dispatches at most
 * `rate × weight` of one key's activities a second, to all workers together. Idempotent; the
 * last worker to start sets it. `perSecond` (requests) 0 removes the limit.
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
            rateLimit: { requestsPerSecond: perSecond / PAGES_PER_PACED_ACTIVITY },
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
  return typeof activities === 'number' ? activities * PAGES_PER_PACED_ACTIVITY : null;
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

/** What a failed activity says about a rate limit, when it was one. */
function limitSignalOf(error: unknown, at: number): RateLimitSignal | undefined {
  if (!(error instanceof ApplicationFailure) || error.type !== 'RateLimitedError') return;
  const [details] = error.details ?? [];
  const d = (details ?? {}) as { status?: unknown; retryAfterMs?: unknown; operation?: unknown };
  return {
    at,
    status: typeof d.status === 'number' ? d.status : null,
    retryAfterMs: typeof d.retryAfterMs === 'number' ? d.retryAfterMs : null,
    operation: typeof d.operation === 'string' ? d.operation : null,
  };
}

/**
 * Activity interceptor: when the service turns a request away for its rate, the activity's
 * own workflow is told (it lowers the connection's pace, `workflows/rate-limit.ts`) and so is
 * the connection's workflow (it keeps the last signal for `ebsync connections` and counts the
 * refusals per minute for the status). The retry itself waits for Retry-After with jitter
 * (activities/failures.ts).
 */
export function rateLimitSignals(
  client: Client,
  onError: (error: unknown) => void = () => undefined,
): ActivityInterceptorsFactory {
  const signal = (workflowId: string, value: RateLimitSignal): void =>
    void client.workflow.getHandle(workflowId).signal(rateLimitedSignal, value).catch(onError);
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
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (error) {
          const limited = limitSignalOf(error, Date.now());
          const connectionId = ctx.info.priority?.fairnessKey;
          if (limited && connectionId) {
            const own = ctx.info.workflowExecution?.workflowId;
            const connection = connectionWorkflowId(connectionId);
            if (own && own !== connection) pace(own, limited);
            count(connection, limited);
          }
          throw error;
        }
      },
    },
  });
}
