import {
  allHandlersFinished,
  condition,
  continueAsNew,
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

/** Reads per run before the history is handed to a fresh run. */
const READS_PER_RUN = 200;
const DEFAULT_IDLE_MS = 15 * 60_000;

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
    await refreshRecord({
      connectionId: input.connectionId,
      destination: input.destination,
      resource: input.resource,
      recordId: input.recordId,
    });
    summary.reads += 1;
    if (summary.reads >= READS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof recordWorkflow>({ ...input, seen, pending: dirty });
    }
  }
  await condition(allHandlersFinished);
  return summary;
}
