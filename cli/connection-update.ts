import type { Client } from '@temporalio/client';
import { statusQuery, type ConnectionStatus } from '../workflows/connection-types.js';
import { withinDeadline } from './workflow-deadline.js';

/*
 * An update to a connection's workflow, as `ebsync connections pause|resume`, `ebsync connect`
 * on a connection that exists and the status page's pause and resume send it: one order of
 * steps for all, each caller with its own deadline and words.
 */

/** How every caller says what became of an update no worker took in time. */
export const REQUEST_KEPT =
  "the request is kept and is carried out when a worker runs the connection's workflow";

/** What a caller says when no worker answered in time: before anything was sent, or after. */
export interface UnansweredUpdate {
  /** No worker answered the status query: nothing was sent, so "try again" holds. */
  unanswered: () => Error;
  /**
   * A worker answered the query, then none took the update in time: Temporal keeps it and
   * carries it out when a worker runs the workflow, so this must say so (REQUEST_KEPT).
   */
  kept: () => Error;
  /**
   * Runs the status query (cli/worker-check.ts, watchWorker): when no worker takes tasks, it
   * ends the wait at once instead of at the deadline. Absent: the query alone.
   */
  watch?: (ask: (signal: AbortSignal) => Promise<ConnectionStatus>) => Promise<ConnectionStatus>;
}

/**
 * The connection's status, asked within `ms` before anything is sent to it: a query that no
 * worker answers is dropped by Temporal, so when none answers (`unanswered()` is thrown)
 * nothing was asked that a worker could carry out later.
 */
export function connectionStatusWithin(
  client: Client,
  workflowId: string,
  ms: number,
  unanswered: () => Error,
  signal?: AbortSignal,
): Promise<ConnectionStatus> {
  const ask = () =>
    withinDeadline(
      client,
      ms,
      () => client.workflow.getHandle(workflowId).query(statusQuery),
      unanswered,
    );
  return signal ? client.withAbortSignal(signal, ask) : ask();
}

/**
 * `update`, sent only once a worker answered the status query, each within `ms`. Temporal keeps
 * an update no worker has taken yet and delivers it when one runs the workflow, and it cannot
 * be withdrawn: asking first means "try again" is said only when nothing was sent, and "the
 * request is kept" when the worker went away in between.
 */
export async function updateOnceAnswered<T>(
  client: Client,
  workflowId: string,
  ms: number,
  /** Given the status the worker answered, so a caller can say what was so before it. */
  update: (before: ConnectionStatus) => Promise<T>,
  say: UnansweredUpdate,
): Promise<T> {
  const ask = (signal?: AbortSignal) =>
    connectionStatusWithin(client, workflowId, ms, say.unanswered, signal);
  const before = await (say.watch ? say.watch(ask) : ask());
  return withinDeadline(client, ms, () => update(before), say.kept);
}
