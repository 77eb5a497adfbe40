import {
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { createRecordActivities } from '../activities/mirror/refresh-record.js';
import {
  recordChangeSignal,
  recordSummaryQuery,
  SEEN_LIMIT,
  type RecordInput,
  type RecordSummary,
} from './record-types.js';

const { refreshRecord } = proxyActivities<ReturnType<typeof createRecordActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});

// Automations out: a few hours of backoff, then the change is given up for that endpoint (the
// delivery log says so); the breaker keeps a dead endpoint from being hammered meanwhile.
const { forwardChange } = proxyActivities<ReturnType<typeof createRecordActivities>>({
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 minutes',
    backoffCoefficient: 2,
    maximumAttempts: 30,
  },
});

/** Reads per run before the history is handed to a fresh run. */
const READS_PER_RUN = 200;
const DEFAULT_IDLE_MS = 15 * 60_000;

async function forward(
  input: RecordInput,
  action: 'written' | 'deleted',
  record: unknown,
  read: number,
): Promise<void> {
  try {
    await forwardChange({
      // The run and the read number name this change: the same on every retry and replay.
      webhookId: `msg_${workflowInfo().runId}_${read}`,
      connectionId: input.connectionId,
      resource: input.resource,
      recordId: input.recordId,
      action,
      record,
      appliedAt: new Date().toISOString(),
    });
  } catch (error) {
    // The record is applied; an endpoint that never answered must not stop later changes.
    log.warn('automation endpoints were not reached; see ebsync webhooks deliveries', {
      error: (error as Error).message,
    });
  }
}

/**
 * Keeps one record of one connection in step with the service after webhooks: each notice
 * marks it dirty, and after a short quiet time it is read again and written (one activity,
 * the mirror's write path). Reads never overlap, so changes land in the order the service
 * made them, and a burst of notices costs one read. Duplicate deliveries (the same id) are
 * dropped. The workflow ends after a quiet spell; the next notice starts it again.
 */
export async function recordWorkflow(input: RecordInput): Promise<RecordSummary> {
  const seen: string[] = [...(input.seen ?? [])];
  const known = new Set(seen);
  let dirty = input.pending ?? false;
  const summary: RecordSummary = { reads: 0, notices: 0, duplicates: 0 };
  const forwarding = new Set<Promise<void>>();

  setHandler(recordSummaryQuery, () => summary);
  setHandler(recordChangeSignal, (change) => {
    if (known.has(change.deliveryId)) {
      summary.duplicates += 1;
      return;
    }
    known.add(change.deliveryId);
    seen.push(change.deliveryId);
    while (seen.length > SEEN_LIMIT) known.delete(seen.shift()!);
    summary.notices += 1;
    dirty = true;
  });

  for (;;) {
    if (!(await condition(() => dirty, input.idleMs ?? DEFAULT_IDLE_MS))) break;
    await sleep(input.debounceMs);
    // Notices arriving during the read below make the record dirty again: one more read.
    dirty = false;
    const applied = await refreshRecord({
      connectionId: input.connectionId,
      destination: input.destination,
      resource: input.resource,
      recordId: input.recordId,
    });
    summary.reads += 1;
    // Histories recorded before automations existed have no forward step.
    if (applied.outcome !== 'unchanged' && applied.forward === true && patched('automations-out')) {
      // Not awaited: a slow or dead endpoint must not hold back the next change to the record.
      const sending = forward(input, applied.outcome, applied.record ?? null, summary.reads);
      forwarding.add(sending);
      void sending.finally(() => forwarding.delete(sending));
    }
    if (summary.reads >= READS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await Promise.all(forwarding);
      await condition(allHandlersFinished);
      await continueAsNew<typeof recordWorkflow>({ ...input, seen, pending: dirty });
    }
  }
  await Promise.all(forwarding);
  await condition(allHandlersFinished);
  return summary;
}
