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

/** Worker identities that started activities of this type, with how many each started. */
export function activityWorkers(
  runs: readonly HistoryEvent[][],
  activityType: string,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const run of runs) {
    const scheduled = new Map<string, string>();
    for (const e of run) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
      const started = e.activityTaskStartedEventAttributes;
      if (started && scheduled.get(String(started.scheduledEventId)) === activityType) {
        const who = started.identity ?? '';
        out.set(who, (out.get(who) ?? 0) + 1);
      }
    }
  }
  return out;
}
