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
 * the connection's workflow (it keeps the last signal for `ebsync connections`). The retry
 * itself waits for Retry-After with jitter (activities/failures.ts).
 */
export function rateLimitSignals(
  client: Client,
  onError: (error: unknown) => void = () => undefined,
): ActivityInterceptorsFactory {
  const lastSent = new Map<string, number>();
  const send = (workflowId: string, signal: RateLimitSignal): void => {
    if (signal.at - (lastSent.get(workflowId) ?? Number.NEGATIVE_INFINITY) < SIGNAL_EVERY_MS)
      return;
    lastSent.set(workflowId, signal.at);
    client.workflow.getHandle(workflowId).signal(rateLimitedSignal, signal).catch(onError);
  };
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (error) {
          const signal = limitSignalOf(error, Date.now());
          const connectionId = ctx.info.priority?.fairnessKey;
          if (signal && connectionId) {
            const own = ctx.info.workflowExecution?.workflowId;
            if (own) send(own, signal);
            send(connectionWorkflowId(connectionId), signal);
          }
          throw error;
        }
      },
    },
  });
}
