import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { LoadedDataConverter } from '@temporalio/common';
import {
  decodeFromPayloadsAtIndex,
  decodeOptionalFailureToOptionalError,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import type { BeatDetails } from '../activities/heartbeats.js';
import { maskCredentials } from '../config/database-locations.js';
import { CONNECTION_PAUSED } from '../workflows/connection-types.js';

/**
 * What a running mirror's activities are retrying, from Temporal's description of the workflow
 * (its pending activities, their attempt and last failure). The mirror retries a failure a
 * retry can fix without end (a destination or the service away for a while), and its own
 * progress cannot say so: the workflow does not see an activity's attempts. This does, for
 * `ebsync sync`'s progress line and `ebsync status`.
 */
export interface RetryView {
  /** The activity's type (`mirrorPage`, `planMirrorPass`...). */
  activity: string;
  /** The attempt scheduled or running now: 2 after one failure. */
  attempt: number;
  /** The last failure's type (its error class), when it has one. */
  type: string | null;
  /** The last failure's message, any `//user:password@` masked. */
  reason: string;
  /** Epoch ms the last attempt failed, and the next one is due (null when not known). */
  lastFailedAt: number | null;
  nextAttemptAt: number | null;
  /**
   * A wait rather than a fault: a rate limit (429, a CRM's rate window: failures marked benign)
   * or a paused connection. Shown, never a problem.
   */
  wait: boolean;
}

/**
 * Failures in a row after which a retrying activity is a problem in `ebsync status`: with the
 * mirror's backoff (1 s doubling) four failures take about 15 s, longer than a lost connection
 * or a database restart usually lasts, and fewer are shown as retrying but not as a problem.
 */
export const RETRY_PROBLEM_ATTEMPT = 5;

/** Temporal's ApplicationErrorCategory BENIGN (proto enum value). */
const BENIGN = 1;

/** A protobuf Timestamp as epoch ms (its seconds are a Long, or a number once decoded). */
function msOf(
  ts:
    { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined,
): number | null {
  const seconds = ts?.seconds;
  if (seconds === undefined || seconds === null) return null;
  const whole = typeof seconds === 'number' ? seconds : seconds.toNumber();
  return whole * 1000 + Math.floor((ts?.nanos ?? 0) / 1e6);
}

type Pending = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

/**
 * Whether a pending activity's current attempt has made progress: Temporal keeps the last
 * failure and the attempt number until the activity completes, so a retry that reads again (a
 * mirror page's attempt lasts seconds) still looked like one waiting to be tried. Its beats say
 * so (BeatDetails); only those sent since the attempt started count (Temporal keeps an earlier
 * attempt's details too). Details that cannot be read (other keys) say nothing.
 */
async function movedOn(pending: Pending, converter: LoadedDataConverter): Promise<boolean> {
  return (await beatsOf(pending, converter))?.progressed === true;
}

/** The beats an attempt sent since it started (BeatDetails), or undefined: none, or unread. */
async function beatsOf(
  pending: Pending,
  converter: LoadedDataConverter,
): Promise<Partial<BeatDetails> | undefined> {
  const { PENDING_ACTIVITY_STATE_STARTED } = proto.temporal.api.enums.v1.PendingActivityState;
  if (pending.state !== PENDING_ACTIVITY_STATE_STARTED) return undefined;
  const started = msOf(pending.lastStartedTime);
  const beat = msOf(pending.lastHeartbeatTime);
  if (started === null || beat === null || beat < started) return undefined;
  return decodeFromPayloadsAtIndex<Partial<BeatDetails> | undefined>(
    converter,
    0,
    pending.heartbeatDetails?.payloads,
  ).catch(() => undefined);
}

/**
 * Until when a running pass's requests wait for the connection's rate slot (epoch ms), when
 * one of its activities said so in its last beat and that time is still ahead of `now`: a pass
 * whose requests are held (a long Retry-After) reads nothing meanwhile, and its activities'
 * beats keep it alive, so nothing else tells it from one at work. Null otherwise.
 */
export async function slotWaitOf(
  description: Pick<WorkflowExecutionDescription, 'raw'>,
  converter: LoadedDataConverter,
  now = Date.now(),
): Promise<number | null> {
  let until: number | null = null;
  for (const pending of description.raw.pendingActivities ?? []) {
    const waited = (await beatsOf(pending, converter))?.slotWaitUntil;
    if (typeof waited === 'number' && waited > now + SLOT_WAIT_SHOWN_MS) {
      until = Math.max(until ?? 0, waited);
    }
  }
  return until;
}

/**
 * Slot waits shorter than this are the pace itself (a slot every 1/rate s, the next few
 * queued behind the other lanes), not worth a line.
 */
const SLOT_WAIT_SHOWN_MS = 5_000;

/**
 * An activity task due this long and not taken by any worker waits for one: matching hands a
 * task to a polling worker within milliseconds, and a worker polls only while it has a free
 * activity slot, so a wait this long is a worker's slots all taken or no worker polling.
 */
const WORKER_WAIT_SHOWN_MS = 10_000;

/** What a running pass waits on when its activities wait for a worker (PassView.workerWait). */
export interface WorkerWait {
  /** Epoch ms the longest-waiting activity became due (scheduled, or its retry's time came). */
  since: number;
  /** The task queue its activities wait on. */
  taskQueue: string;
}

/**
 * Whether a running pass's activities wait for a worker to take them: one is scheduled (not
 * started) and was due over WORKER_WAIT_SHOWN_MS ago. Temporal's `scheduledTime` is when the
 * current attempt is due: a retry's backoff ahead of now is a retry's wait, not this. Every
 * worker's activity slots taken (by other passes) leaves the pass running in Temporal, and its
 * progress as of its last page: nothing else tells it from one at work. Null otherwise.
 */
export function workerWaitOf(
  description: Pick<WorkflowExecutionDescription, 'raw' | 'taskQueue'>,
  now = Date.now(),
): WorkerWait | null {
  const { PENDING_ACTIVITY_STATE_SCHEDULED } = proto.temporal.api.enums.v1.PendingActivityState;
  let since: number | null = null;
  for (const pending of description.raw.pendingActivities ?? []) {
    if (pending.state !== PENDING_ACTIVITY_STATE_SCHEDULED) continue;
    const due = msOf(pending.scheduledTime);
    if (due !== null && due < now - WORKER_WAIT_SHOWN_MS) since = Math.min(since ?? due, due);
  }
  return since === null ? null : { since, taskQueue: description.taskQueue };
}

/** Epoch ms as an ISO 8601 time to the second (`2026-12-08T01:40:52Z`). */
function isoSecond(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * An activity attempt at work this long without returning is shown: a mirror page returns
 * within seconds (SLICE_MS, READ_BY_ID_MS in activities/mirror/pass-tools.ts), but the reads by
 * id of records no list reaches run in the activity that ends their list, a few a second at the
 * connection's rate: a black-box run (sandbox --reach-limit 2, 3000 events) held the line at
 * `4294 read` for three minutes while 2,000 events were read, its records/s falling.
 */
const BUSY_SHOWN_MS = 15_000;

/** A running pass's activity at work for a while without returning (PassView.busy). */
export interface BusyActivity {
  /** The activity's type (`mirrorPage`...). */
  activity: string;
  /** Epoch ms its current attempt started. */
  since: number;
}

/**
 * The running activity whose current attempt has made progress (its beats say so) and started
 * over BUSY_SHOWN_MS ago, the longest at work first; null when none. What it reads is counted
 * in the pass's progress only when it returns, so the counts stand still meanwhile.
 */
export async function busyActivityOf(
  description: Pick<WorkflowExecutionDescription, 'raw'>,
  converter: LoadedDataConverter,
  now = Date.now(),
): Promise<BusyActivity | null> {
  let busy: BusyActivity | null = null;
  for (const pending of description.raw.pendingActivities ?? []) {
    const since = msOf(pending.lastStartedTime);
    if (since === null || since > now - BUSY_SHOWN_MS) continue;
    if (busy !== null && busy.since <= since) continue;
    if (!(await movedOn(pending, converter))) continue;
    busy = { activity: pending.activityType?.name ?? 'activity', since };
  }
  return busy;
}

/** One line: `reading: mirrorPage has been at work since <time> …` (PassView.busy). */
export function busyLine(busy: BusyActivity): string {
  return (
    `reading: ${busy.activity} has been at work since ${isoSecond(busy.since)} ` +
    `(such as the reads by id of records no list reaches); what it reads is counted when it returns`
  );
}

/** `its activities wait for a worker since <time> (…)` (PassView.workerWait). */
export function workerWaitWords(wait: WorkerWait): string {
  return (
    `its activities wait for a worker since ${isoSecond(wait.since)} ` +
    `(every activity slot of the workers on task queue '${wait.taskQueue}' is taken, by other passes, ` +
    `or no worker polls it for activities)`
  );
}

/** One line: `waiting: its activities wait for a worker since <time> (…)`. */
export function workerWaitLine(wait: WorkerWait): string {
  return `waiting: ${workerWaitWords(wait)}`;
}

/**
 * A failure's message: sealed in its encoded attributes (worker/failure-converter.cjs), where
 * the raw description holds `Encoded failure`, and opened here with the client's keys. One
 * that does not open (other keys) keeps what the description says.
 */
export async function failureMessage(
  failure: NonNullable<Pending['lastFailure']>,
  converter: LoadedDataConverter,
): Promise<string> {
  const opened = await decodeOptionalFailureToOptionalError(converter, failure).catch(
    () => undefined,
  );
  return opened?.message ?? failure.message ?? '';
}

/**
 * The pending activity that failed most often in a row and has not made progress since, if any
 * has failed at all. `converter` reads the activities' heartbeat details (the client's own).
 */
export async function retryOf(
  description: Pick<WorkflowExecutionDescription, 'raw'>,
  converter: LoadedDataConverter,
): Promise<RetryView | null> {
  let worst: RetryView | null = null;
  for (const pending of description.raw.pendingActivities ?? []) {
    const failure = pending.lastFailure;
    const attempt = pending.attempt ?? 1;
    if (!failure || attempt < 2) continue;
    if (worst && worst.attempt >= attempt) continue;
    if (await movedOn(pending, converter)) continue;
    const info = failure.applicationFailureInfo;
    const type = info?.type || (failure.timeoutFailureInfo ? 'timeout' : null);
    worst = {
      activity: pending.activityType?.name ?? 'activity',
      attempt,
      type,
      reason: maskCredentials((await failureMessage(failure, converter)).split('\n')[0] ?? ''),
      lastFailedAt: msOf(pending.lastAttemptCompleteTime),
      nextAttemptAt: msOf(pending.nextAttemptScheduleTime),
      wait: Number(info?.category ?? 0) === BENIGN || type === CONNECTION_PAUSED,
    };
  }
  return worst;
}

/** Whether a retry has gone on long enough to need a person (see RETRY_PROBLEM_ATTEMPT). */
export function isRetryProblem(retry: RetryView | null | undefined): boolean {
  return !!retry && !retry.wait && retry.attempt >= RETRY_PROBLEM_ATTEMPT;
}

/**
 * One line: `retrying: destination postgres://***@host/db unreachable (connect ECONNREFUSED
 * …), attempt 8`. `destination` is masked here too.
 */
export function retryLine(retry: RetryView, destination?: string | null): string {
  const where = destination ? maskCredentials(destination) : 'the destination';
  let what: string;
  if (retry.type === 'DestinationUnavailableError') {
    // "the Postgres destination failed: connect ECONNREFUSED …": the destination is named here.
    what = `destination ${where} unreachable (${retry.reason.replace(/^the \w+ destination failed: /, '')})`;
  } else if (retry.type?.startsWith('Destination')) {
    what = `destination ${where}: ${retry.reason}`;
  } else {
    what = `${retry.activity}: ${retry.reason}${retry.type ? ` (${retry.type})` : ''}`;
  }
  return `${retry.wait ? 'waiting' : 'retrying'}: ${what}, attempt ${retry.attempt}`;
}

/** `its requests wait for the connection's rate slot until <time>` (PassView.slotWaitUntil). */
export function slotWaitWords(until: number): string {
  return `its requests wait for the connection's rate slot until ${isoSecond(until)}`;
}

/**
 * One line: `waiting: its requests wait for the connection's rate slot until <time> …`, for a
 * pass whose requests are held (PassView.slotWaitUntil).
 */
export function slotWaitLine(until: number): string {
  return (
    `waiting: ${slotWaitWords(until)} (held after the service turned requests away, or ` +
    `queued behind other passes of the connection); nothing is read meanwhile`
  );
}

/**
 * What a running pass waits on, when it is a wait rather than work or a fault: its requests
 * held for their rate slot, its activities waiting for a worker, or an activity waiting out a rate limit or a paused connection
 * (a retry marked as a wait). Undefined otherwise. Said after "its pass … ".
 */
export async function passWaitWords(
  description: Pick<WorkflowExecutionDescription, 'raw' | 'taskQueue'>,
  converter: LoadedDataConverter,
): Promise<string | undefined> {
  const until = await slotWaitOf(description, converter);
  if (until !== null) return slotWaitWords(until);
  const worker = workerWaitOf(description);
  if (worker !== null) return workerWaitWords(worker);
  const retry = await retryOf(description, converter);
  return retry?.wait ? retryLine(retry).replace(/^waiting: /, 'waits: ') : undefined;
}
