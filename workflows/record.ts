import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  createRecordActivities,
  RefreshInput,
  RefreshOutput,
} from '../activities/mirror/refresh-record.js';
import {
  CLIENT_NOT_AT_HAND,
  recordChangeSignal,
  recordSummaryQuery,
  SEEN_LIMIT,
  type RecordInput,
  type RecordSummary,
} from './record-types.js';
import { FORWARDING } from './forwarding.js';

const READ_RETRY = {
  initialInterval: '1 second',
  maximumInterval: '1 minute',
  backoffCoefficient: 2,
} as const;

const { refreshRecord } = proxyActivities<ReturnType<typeof createRecordActivities>>({
  startToCloseTimeout: '1 minute',
  retry: READ_RETRY,
});

// The read as a local activity: run by the worker inside the workflow task that saw the
// notice, so a change costs one workflow task instead of three plus an activity task. Retries
// wait in the worker up to 10 s (the task heartbeats meanwhile, holding one of the worker's
// task slots); longer waits become durable timers. After 30 s of failures the read falls back
// to the ordinary activity above, whose retries the server keeps for as long as an outage
// lasts, holding no slot: many records waiting out an outage must not fill the worker.
const { refreshRecord: refreshRecordLocal } = proxyLocalActivities<
  ReturnType<typeof createRecordActivities>
>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '30 seconds',
  localRetryThreshold: '10 seconds',
  retry: READ_RETRY,
});

// Automations out.
const { forwardChange } = proxyActivities<ReturnType<typeof createRecordActivities>>(FORWARDING);

/** Reads per run before the history is handed to a fresh run. */
const READS_PER_RUN = 200;
const DEFAULT_IDLE_MS = 15 * 60_000;

async function readQuickly(input: RefreshInput): Promise<RefreshOutput> {
  try {
    return await refreshRecordLocal(input);
  } catch (error) {
    if (isCancellation(error)) throw error;
    // A local activity's failure may come as its cause itself, not wrapped in ActivityFailure.
    const cause = error instanceof ActivityFailure ? error.cause : error;
    // The worker had no client at hand without asking the connection workflow, which a read
    // must not wait for inside this task: an ordinary activity reads instead.
    if (cause instanceof ApplicationFailure && cause.type === CLIENT_NOT_AT_HAND)
      return refreshRecord(input);
    // A refusal would be refused again: it fails the workflow as the ordinary activity's does.
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw error;
    log.warn('the record could not be read for 30 s; retrying as an ordinary activity', {
      error: cause instanceof Error ? cause.message : String(cause),
    });
    return refreshRecord(input);
  }
}

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
 * Keeps one record of one connection in step with the service after webhooks: a notice marks
 * it dirty, and it is read again by id and written (the mirror's write path). The first
 * notice after a quiet spell is read at once; a notice that arrives during a read, or within
 * the debounce after one, waits out the debounce, so a burst costs one more read, not one per
 * notice. Reads never overlap, so changes land in the order the service made them. Duplicate
 * deliveries (the same id) are dropped. The workflow ends after a quiet spell; the next notice
 * starts it again.
 */
export async function recordWorkflow(input: RecordInput): Promise<RecordSummary> {
  const seen: string[] = [...(input.seen ?? [])];
  const known = new Set(seen);
  let dirty = input.pending ?? false;
  const summary: RecordSummary = { reads: 0, notices: 0, duplicates: 0 };
  const forwarding = new Set<Promise<void>>();
  /** Workflow time the last read ended (deterministic: local activity markers carry it). */
  let lastReadEnd: number | undefined;

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
    // Histories recorded before this change always waited, then read as an ordinary activity.
    const readAtOnce = patched('record-read-at-once');
    const sinceRead = lastReadEnd === undefined ? Infinity : Date.now() - lastReadEnd;
    if (!readAtOnce) await sleep(input.debounceMs);
    else if (sinceRead < input.debounceMs) await sleep(input.debounceMs - sinceRead);
    // Notices arriving during the read below make the record dirty again: one more read.
    dirty = false;
    const target: RefreshInput = {
      connectionId: input.connectionId,
      destination: input.destination,
      resource: input.resource,
      recordId: input.recordId,
    };
    const applied = readAtOnce ? await readQuickly(target) : await refreshRecord(target);
    lastReadEnd = Date.now();
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
