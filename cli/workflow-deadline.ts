import {
  isGrpcServiceError,
  ServiceError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';

/** gRPC's DEADLINE_EXCEEDED, CANCELLED and FAILED_PRECONDITION. */
export const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_CANCELLED = 1;
/** gRPC's UNAVAILABLE: nothing answers at the address, or the server is restarting. */
const GRPC_UNAVAILABLE = 14;
const GRPC_FAILED_PRECONDITION = 9;

/** An error and its causes, outermost first (a few levels: Temporal wraps gRPC errors). */
export function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && chain.length < 8; e = (e as { cause?: unknown }).cause) {
    chain.push(e);
    if (typeof e !== 'object' || e === null) break;
  }
  return chain;
}

/**
 * An error and its causes in one line: the SDK wraps what the worker said ("Failed to query
 * Workflow") around the reason (its gRPC details), which is the part worth reading.
 */
export function messageOf(error: unknown): string {
  const parts: string[] = [];
  for (const e of causes(error)) {
    const said = e instanceof Error ? e.message : String(e);
    const details = (e as { details?: unknown }).details;
    for (const text of [said, typeof details === 'string' ? details : '']) {
      const line = text.split('\n')[0]?.trim() ?? '';
      if (line && !parts.some((p) => p.includes(line))) parts.push(line);
    }
  }
  return parts.join(': ');
}

/** Whether a call failed because Temporal could not be reached (not because it said no). */
export function temporalAway(error: unknown): boolean {
  return causes(error).some(
    (e) =>
      (isGrpcServiceError(e) && Number(e.code) === GRPC_UNAVAILABLE) ||
      (e instanceof ServiceError && /connect|unavailable/i.test(e.message)),
  );
}

/**
 * `fn` (an update, a query, a start) under a deadline: a workflow that no worker answers (its
 * task queue's poller went away a moment ago, so the check for a worker passed) would
 * otherwise be waited on for good. Past the deadline, `late()` is thrown instead.
 */
export async function withinDeadline<T>(
  client: Client,
  ms: number,
  fn: () => Promise<T>,
  late: () => Error,
): Promise<T> {
  const deadline = Date.now() + ms;
  try {
    return await client.withDeadline(deadline, fn);
  } catch (error) {
    // How a call cut at its deadline fails depends on where it was: a gRPC DEADLINE_EXCEEDED,
    // or, for an update's long poll, the SDK's timeout-or-cancelled error around a CANCELLED.
    const cut = causes(error).some(
      (e) =>
        e instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
        (isGrpcServiceError(e) &&
          (Number(e.code) === GRPC_DEADLINE_EXCEEDED || Number(e.code) === GRPC_CANCELLED)),
    );
    // A query whose workflow's worker went away is answered a second before the deadline with
    // the server's own verdict, "no poller seen for task queue recently, worker may be down".
    const noPoller = causes(error).some(
      (e) =>
        isGrpcServiceError(e) &&
        Number(e.code) === GRPC_FAILED_PRECONDITION &&
        /no poller seen/i.test(e.details),
    );
    throw noPoller || (cut && Date.now() >= deadline - 100) ? late() : error;
  }
}
