import { ScheduleNotFoundError, type Client, type ScheduleDescription } from '@temporalio/client';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { ValueError } from '@temporalio/common';
import { ENCRYPTED_ENCODING, PayloadDecryptionError } from '../worker/codec.js';
import { MIRROR_SUBJECTS } from '../workflows/mirror-types.js';

/*
 * The mirror schedules as ebsync shows them (`ebsync schedule list|describe`, the status):
 * read from each schedule's memo and description. Apart from cli/schedules.ts, which creates
 * them, so that `ebsync status` need not load the sync command.
 */

/** What a schedule's memo records, so `list` can say what each one mirrors without its args. */
export interface ScheduleMemo {
  ebsync: 'mirror';
  connectionId: string;
  what: string;
  mode: 'full' | 'incremental';
  /** Masked: a postgres:// destination may hold a password. */
  destination: string;
  when: string;
}

/** A schedule as `describe --json` and `list --json` print it. */
export interface ScheduleView {
  scheduleId: string;
  connectionId: string | null;
  what: string | null;
  mode: string | null;
  destination: string | null;
  when: string | null;
  /** The task queue its runs go to (one deployment's worker). */
  taskQueue: string | null;
  /** The workflow id of the mirror its runs start (`ebsync sync`'s for the same request). */
  mirrorWorkflowId: string | null;
  paused: boolean;
  note: string | null;
  overlap: string;
  catchupWindowMs: number;
  jitterMs: number;
  nextRuns: string[];
  recentRuns: { workflowId: string; scheduledAt: string; takenAt: string }[];
  running: string[];
  actionsTaken: number;
  skippedOverlap: number;
  missedCatchupWindow: number;
}

function memoOf(memo: Record<string, unknown> | undefined): ScheduleMemo | undefined {
  return memo?.ebsync === 'mirror' ? (memo as unknown as ScheduleMemo) : undefined;
}

/** The mirror id in the action's ScheduledMirrorInput (decoded with the memo's keys). */
function mirrorWorkflowIdOf(d: ScheduleDescription): string | null {
  if (d.action.type !== 'startWorkflow') return null;
  const input: unknown = d.action.args?.[0];
  const id =
    typeof input === 'object' && input !== null
      ? (input as { mirrorWorkflowId?: unknown }).mirrorWorkflowId
      : undefined;
  return typeof id === 'string' ? id : null;
}

export function viewOf(d: ScheduleDescription): ScheduleView {
  const memo = memoOf(d.memo);
  return {
    scheduleId: d.scheduleId,
    connectionId: memo?.connectionId ?? null,
    what: memo?.what ?? null,
    mode: memo?.mode ?? null,
    destination: memo?.destination ?? null,
    when: memo?.when ?? null,
    taskQueue: d.action.type === 'startWorkflow' ? d.action.taskQueue : null,
    mirrorWorkflowId: mirrorWorkflowIdOf(d),
    paused: d.state.paused,
    note: d.state.note ?? null,
    overlap: d.policies.overlap ?? 'SKIP',
    catchupWindowMs: d.policies.catchupWindow,
    jitterMs: Number(d.spec.jitter ?? 0),
    // Temporal keeps the times a paused schedule would fire at; it fires at none of them.
    nextRuns: d.state.paused ? [] : d.info.nextActionTimes.map((t) => t.toISOString()),
    recentRuns: d.info.recentActions.map((a) => ({
      workflowId: a.action.workflow.workflowId,
      scheduledAt: a.scheduledAt.toISOString(),
      takenAt: a.takenAt.toISOString(),
    })),
    running: d.info.runningActions.map((a) => a.workflow.workflowId),
    actionsTaken: d.info.numActionsTaken,
    skippedOverlap: d.info.numActionsSkippedOverlap,
    missedCatchupWindow: d.info.numActionsMissedCatchupWindow,
  };
}

/** The mirror schedules of a namespace, and those of its schedules that could not be opened. */
export interface MirrorSchedules {
  views: ScheduleView[];
  /**
   * Ids of the schedules whose memo this process's encryption keys do not open, sorted:
   * another deployment's in the same namespace (other keys), or this one's sealed with a key
   * no longer given. Under a connection, those whose id may be its (`sync-<connection>-…`).
   */
  sealed: string[];
}

/** What follows `sync-<connection>-` in a mirror schedule's id (cli/schedules.ts names them). */
const SUBJECT = MIRROR_SUBJECTS.join('|');
const AFTER_CONNECTION = new RegExp(
  `^(?:all|(?:${SUBJECT})(?:,(?:${SUBJECT}))*)-(?:full|incremental)(?:-|$)`,
);

/**
 * Whether a schedule id names one of this connection's mirrors: connection ids may hold `-`,
 * so `sync-shop-eu-all-full` is not `shop`'s.
 */
function isScheduleOf(id: string, connectionId: string): boolean {
  const prefix = `sync-${connectionId}-`;
  return id.startsWith(prefix) && AFTER_CONNECTION.test(id.slice(prefix.length));
}

/**
 * The mirror schedules of the namespace, optionally of one connection, sorted by id. The
 * namespace may hold other deployments' schedules, sealed with keys this process has not: their
 * ids are returned apart, not opened (the SDK's list decodes every memo and fails on the first
 * of them).
 */
export async function listMirrorSchedules(
  client: Client,
  connectionId?: string,
): Promise<MirrorSchedules> {
  // A set: the list is Temporal's visibility store, where a schedule's workflow can have two
  // running records for a moment (one that continued as new and is not closed there yet).
  const ids = new Set<string>();
  const sealed = new Set<string>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listSchedules({
      namespace: client.options.namespace,
      nextPageToken: nextPageToken ?? null,
    });
    for (const raw of page.schedules ?? []) {
      let memo: ScheduleMemo | undefined;
      try {
        memo = memoOf(
          await decodeMapFromPayloads(client.options.loadedDataConverter, raw.memo?.fields),
        );
      } catch (error) {
        // Sealed with a key this process lacks, or read by a client with no codec at all (the
        // converter then meets the sealed encoding): what it mirrors cannot be read.
        const unopened =
          error instanceof PayloadDecryptionError ||
          (error instanceof ValueError && error.message.includes(ENCRYPTED_ENCODING));
        if (!unopened) throw error;
        // Its id is not sealed: ebsync names a mirror's schedule `sync-<connection>-…`.
        const id = raw.scheduleId ?? '';
        if (connectionId === undefined || isScheduleOf(id, connectionId)) sealed.add(id);
        continue;
      }
      if (
        memo &&
        raw.scheduleId &&
        (connectionId === undefined || memo.connectionId === connectionId)
      ) {
        ids.add(raw.scheduleId);
      }
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  const views: ScheduleView[] = [];
  for (const id of [...ids].sort()) {
    try {
      views.push(viewOf(await client.schedule.getHandle(id).describe()));
    } catch (error) {
      // Listing is eventually consistent: one deleted a moment ago is simply gone.
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }
  return { views, sealed: [...sealed].sort() };
}
