import type { Client } from '@temporalio/client';
import type { DrainWatch } from '../store/inbox.js';
import { webhookDrainWorkflow } from '../workflows/drain.js';
import { drainWorkflowId, inboxWakeSignal } from '../workflows/drain-types.js';

/** A drain's watch with less left than this is not counted on (clocks, a slow poll). */
const WATCH_MARGIN_MS = 500;
/** A wake-up that takes longer fails (and is tried again later). */
const WAKE_TIMEOUT_MS = 5_000;

/**
 * Wakes a connection's drain: signal-with-start of `webhooks:<connection>`, so the first
 * notice of a connection starts its drain and later ones reach the running one.
 */
export function drainWaker(
  client: Client,
  taskQueue: string,
  watching?: (connectionId: string) => Promise<DrainWatch | null>,
): (connectionId: string, destination: string) => Promise<void> {
  return async (connectionId, destination) => {
    // A drain that promised to look at the inbox itself (for this destination, for a while
    // yet) finds the notice without a wake-up. When the store cannot say, the wake-up goes.
    const watch = await watching?.(connectionId).catch(() => null);
    if (watch && watch.destination === destination && watch.msLeft > WATCH_MARGIN_MS) return;
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
