import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * The histories of a workflow's continue-as-new chain, from its first run on (event ids
 * restart with each run): the whole story of one mirror pass.
 */
export async function chainHistory(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | null | undefined = firstRunId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const run: HistoryEvent[] = history.events ?? [];
    runs.push(run);
    runId = run.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return runs;
}

/** How runs of the chain ended other than by completing or continuing as new. */
export function failedRuns(runs: readonly HistoryEvent[][]): string[] {
  return runs
    .flat()
    .filter(
      (e) =>
        e.workflowExecutionFailedEventAttributes ??
        e.workflowExecutionTimedOutEventAttributes ??
        e.workflowExecutionTerminatedEventAttributes ??
        e.workflowExecutionCanceledEventAttributes,
    )
    .map((e) => String(e.eventType));
}

/** The started and completed events of activities of this type, in history order. */
function* activityEvents(
  runs: readonly HistoryEvent[][],
  activityType: string,
): Generator<HistoryEvent> {
  for (const run of runs) {
    const scheduled = new Map<string, string>();
    for (const e of run) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
      const of =
        e.activityTaskStartedEventAttributes?.scheduledEventId ??
        e.activityTaskCompletedEventAttributes?.scheduledEventId;
      if (of !== undefined && of !== null && scheduled.get(String(of)) === activityType) yield e;
    }
  }
}

/** Worker identities that started activities of this type, with how many each started. */
export function activityWorkers(
  runs: readonly HistoryEvent[][],
  activityType: string,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of activityEvents(runs, activityType)) {
    const started = e.activityTaskStartedEventAttributes;
    if (!started) continue;
    const who = started.identity ?? '';
    out.set(who, (out.get(who) ?? 0) + 1);
  }
  return out;
}

const eventMs = (e: HistoryEvent): number =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);

/**
 * Seconds from the first start of an activity of this type to the last completion of one:
 * how long the chain spent reading, without planning before and closing after.
 */
export function activitySpanSeconds(
  runs: readonly HistoryEvent[][],
  activityType: string,
): number | null {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const e of activityEvents(runs, activityType)) {
    if (e.activityTaskStartedEventAttributes) first = Math.min(first, eventMs(e));
    else last = Math.max(last, eventMs(e));
  }
  return last > first ? (last - first) / 1000 : null;
}
