import type { Client } from '@temporalio/client';
import { webhookDrainWorkflow } from '../workflows/drain.js';
import { drainWorkflowId, inboxWakeSignal } from '../workflows/drain-types.js';

/** A wake-up that takes longer fails (and is tried again later). */
const WAKE_TIMEOUT_MS = 5_000;

/**
 * Wakes a connection's drain: signal-with-start of `webhooks:<connection>`, so the first
 * notice of a connection starts its drain and later ones reach the running one.
 */
export function drainWaker(
  client: Client,
  taskQueue: string,
): (connectionId: string, destination: string) => Promise<void> {
  return async (connectionId, destination) => {
    await client.connection.withDeadline(Date.now() + WAKE_TIMEOUT_MS, () =>
      client.workflow.signalWithStart(webhookDrainWorkflow, {
        workflowId: drainWorkflowId(connectionId),
        taskQueue,
        args: [{ connectionId, destination }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination }],
      }),
    );
  };
}
