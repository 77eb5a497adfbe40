import { isGrpcServiceError, type Client } from '@temporalio/client';

/** gRPC's DEADLINE_EXCEEDED. */
export const GRPC_DEADLINE_EXCEEDED = 4;

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
  try {
    return await client.withDeadline(Date.now() + ms, fn);
  } catch (error) {
    const timedOut = causes(error).some(
      (e) => isGrpcServiceError(e) && Number(e.code) === GRPC_DEADLINE_EXCEEDED,
    );
    throw timedOut ? late() : error;
  }
}
