import { counted } from './counted.js';
import { reconnectCommand, syncAgainCommand } from './reconnect-advice.js';
import {
  isGrpcDeadlineError,
  isGrpcServiceError,
  ServiceError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import type { Config } from '../config/index.js';
import { maskCredentials } from '../config/database-locations.js';
import { connectionGone } from '../activities/connection-tokens.js';
import { connectionWorkflowId, type ConnectionState } from '../workflows/connection-types.js';
import { mirrorWorkflow } from '../workflows/mirror.js';
import {
  isIncomplete,
  mirrorProgressQuery,
  type MirrorProgress,
} from '../workflows/mirror-types.js';
import { LIMIT_WINDOW_MS } from '../workflows/rate-limit-types.js';
import { drainStatusQuery, drainWorkflowId } from '../workflows/drain-types.js';
import {
  askConnections,
  queuePollers,
  silentReason,
  STATUS_DEADLINE_MS,
} from './connection-list.js';
import { asOfNow, partlyWritten } from './mirror-summary.js';
import { RECENT_FAILURE_MINUTES } from '../webhooks/receiver-stats.js';
import {
  isRetryProblem,
  retryLine,
  retryOf,
  slotWaitOf,
  busyActivityOf,
  type BusyActivity,
  workerWaitOf,
  type RetryView,
  type WorkerWait,
} from './pass-retry.js';
import { keysApartLine } from '../worker/worker-identity.js';
import { withoutCustomerData } from '../worker/redact.js';
import {
  automationSection,
  endedReason,
  FAILED_RUN,
  inboxSection,
  PORT_UNKNOWN,
  rootReason,
  RUN_STATUS,
  type RunStatus,
  scheduleSection,
  webhookSection,
  type AutomationEndpointsView,
  type InboxView,
  type RunOutcomeCache,
  type ScheduleStatusView,
  type WebhookReceiverView,
} from './status-sections.js';

export type {
  AutomationEndpointsView,
  InboxView,
  ScheduleStatusView,
  WebhookReceiverView,
} from './status-sections.js';

/**
 * The operator's view of a deployment, gathered in one place so `ebsync status`, its JSON and
 * the status page show the same thing. Plain data: it never holds a secret (destinations are
 * masked, credentials are never read).
 */
export interface StatusReport {
  generatedAt: number;
  temporal: { namespace: string; taskQueue: string; uiUrl: string };
  connections: ConnectionView[];
  mirrors: MirrorView[];
  /** Destinations the mirrors write to, masked. */
  destinations: string[];
  /** The mirror schedules (Temporal Schedules), as `ebsync schedule list` lists them. */
  schedules: ScheduleStatusView[];
  /** The webhook receiver at its configured address; `running: false` when it does not answer. */
  webhooks: WebhookReceiverView;
  /** The store's webhook inbox: notices waiting and drained, per connection. */
  inbox: InboxView;
  /** Automation endpoints (`ebsync webhooks endpoints`) with their breaker state; no secret. */
  automations: AutomationEndpointsView;
  /** The service's rate-limit refusals (429, or its 403 variant) of all connections, last hour. */
  rateLimitedLastHour: number;
  /** What needs a person, one line each; empty when all is healthy. */
  problems: Problem[];
}

export interface ConnectionView {
  connectionId: string;
  businessName: string | null;
  /** 'unknown' when its workflow did not answer. */
  kind: string;
  /**
   * 'not_answering': its workflow got no answer from a worker in time, or answered an error
   * (lastError says which; nothing else is known).
   */
  state: ConnectionState | 'not_answering';
  lastError: string | null;
  /** Epoch ms; installed apps only. */
  accessExpiresAt: number | null;
  /**
   * The service's rate-limit refusals of this connection (429, or its 403 variant) that turned
   * an activity attempt away, as the workers reported them: the last hour's total, and per
   * minute ([minute start epoch ms, count], oldest first; minutes without any are absent).
   */
  rateLimited: { lastHour: number; perMinute: [number, number][] };
  workflowId: string;
  uiUrl: string;
}

export type PassStatus = RunStatus;

export interface PassView {
  workflowId: string;
  runId: string;
  status: PassStatus;
  /** Epoch ms. */
  startedAt: number;
  closedAt: number | null;
  /** From the progress query (running) or the workflow's result (completed). */
  progress: MirrorProgress | null;
  /** Why the pass did not complete. */
  error: string | null;
  /** A running pass's activity that failed and is being retried (from Temporal), else null. */
  retrying: RetryView | null;
  /**
   * Until when a running pass's requests wait for the connection's rate slot (epoch ms; its
   * activities' beats say so), when that is more than a few seconds ahead: waiting, not reading.
   */
  slotWaitUntil?: number;
  /**
   * When a running pass's activities wait for a worker to take them (Temporal's description:
   * one due over 10 s ago and not started): since when, and on which task queue. Absent
   * otherwise.
   */
  workerWait?: WorkerWait;
  /**
   * A running pass's activity at work over 15 s without returning (its progress stands still
   * meanwhile): which, and since when. Absent otherwise.
   */
  busy?: BusyActivity;
  uiUrl: string;
}

export interface MirrorView {
  workflowId: string;
  connectionId: string;
  /** Masked; null until a pass reports it. */
  destination: string | null;
  current: PassView | null;
  last: PassView | null;
  /**
   * When the last pass did not complete (failed, canceled…), the newest one that did: how
   * whole the mirror was before it. Null otherwise, or when none did.
   */
  lastCompleted: PassView | null;
  /**
   * Why its connection no longer exists (disconnected, ended, or never there), when no schedule
   * of this task queue mirrors it either: its passes are history then, shown but no problem
   * (nothing can run them again short of `ebsync connect`). Null while the connection runs.
   */
  connectionGone: string | null;
}

export interface Problem {
  /** '' for one of the whole deployment (no worker polls its task queue). */
  connectionId: string;
  kind:
    | 'no_worker'
    | 'worker_keys_differ'
    | 'needs_reauth'
    | 'not_answering'
    | 'last_pass_failed'
    | 'last_pass_incomplete'
    | 'pass_retrying'
    | 'schedule_last_run_failed'
    | 'schedule_never_runs'
    | 'webhooks_waiting'
    | 'webhook_receiver_failing'
    | 'webhook_receiver_spooling'
    | 'refresh_failing'
    | 'webhook_signatures_refused'
    | 'webhook_receiver_down'
    | 'webhook_inbox_unreadable'
    | 'automations_unreadable';
  message: string;
}

/** Closed runs never change: their results are kept here between reports. */
export type ClosedRunCache = Map<string, Pick<PassView, 'progress' | 'error'>>;

/** Executions read from visibility at most: a long history of passes shows its newest. */
const MAX_EXECUTIONS = 2_000;

/** The page of a workflow (or one run of it) in the Temporal UI. */
export function workflowUiUrl(config: Config, workflowId: string, runId?: string): string {
  const base = config.temporal.uiUrl.replace(/\/+$/, '');
  const ns = encodeURIComponent(config.temporal.namespace);
  const id = encodeURIComponent(workflowId);
  return runId
    ? `${base}/namespaces/${ns}/workflows/${id}/${encodeURIComponent(runId)}/history`
    : `${base}/namespaces/${ns}/workflows/${id}`;
}

/** `mirror-<connection>-<12 hex>` (see mirrorWorkflowId) back to the connection id. */
function connectionOfMirror(workflowId: string): string {
  return /^mirror-(.+)-[0-9a-f]{12}$/.exec(workflowId)?.[1] ?? workflowId;
}

/** How long the status waits for a worker to say how far an ended pass got. */
const ENDED_QUERY_DEADLINE_MS = 5_000;

async function closedRun(
  client: Client,
  workflowId: string,
  runId: string,
  cache: ClosedRunCache,
): Promise<Pick<PassView, 'progress' | 'error'>> {
  const known = cache.get(runId);
  if (known) return known;
  const handle = client.workflow.getHandle<typeof mirrorWorkflow>(workflowId, runId, {
    followRuns: false,
  });
  let outcome: Pick<PassView, 'progress' | 'error'>;
  try {
    outcome = { progress: await handle.result(), error: null };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { progress: null, error: null };
    // Temporal not answering (or the report cancelled) says nothing of how the run ended: the
    // report fails, and nothing is cached that a later report would show as the run's reason.
    if (error instanceof ServiceError || isGrpcServiceError(error)) throw error;
    // A pass that failed or was canceled has no result; asked, a worker replays it and says
    // where it wrote and how far it got (unknown, as before, when none answers in time).
    const progress = await client
      .withDeadline(Date.now() + ENDED_QUERY_DEADLINE_MS, () => handle.query(mirrorProgressQuery))
      .catch(() => null);
    outcome = { progress, error: await endedReason(client, error) };
  }
  cache.set(runId, outcome);
  return outcome;
}

async function runningProgress(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<
  Pick<PassView, 'progress' | 'error' | 'retrying' | 'slotWaitUntil' | 'workerWait' | 'busy'>
> {
  const handle = client.workflow.getHandle<typeof mirrorWorkflow>(workflowId, runId);
  // Its progress cannot say that an activity keeps failing, or that its requests wait for
  // their rate slot (the workflow only waits for the activity): Temporal's description of the
  // run can. Not known when it cannot be read: nothing shown.
  const described = handle.describe().catch(() => null);
  const converter = client.options.loadedDataConverter;
  const retrying = described.then((d) => (d ? retryOf(d, converter) : null));
  const waits = described.then(async (d) => {
    const until = d ? await slotWaitOf(d, converter) : null;
    const worker = d ? workerWaitOf(d) : null;
    const busy = d ? await busyActivityOf(d, converter) : null;
    return {
      ...(until === null ? {} : { slotWaitUntil: until }),
      ...(worker === null ? {} : { workerWait: worker }),
      ...(busy === null ? {} : { busy }),
    };
  });
  try {
    // Within the deadline a connection's worker gets too: with no worker, Temporal would
    // hold the query far longer, and the report with it.
    const answered = await client.withDeadline(Date.now() + STATUS_DEADLINE_MS, () =>
      handle.query(mirrorProgressQuery),
    );
    const waiting = (await retrying)?.wait === true || Object.keys(await waits).length > 0;
    return {
      progress: asOfNow(answered, Date.now(), waiting),
      error: null,
      retrying: await retrying,
      ...(await waits),
    };
  } catch (error) {
    // Between runs of continue-as-new, or no worker to answer: the pass is running regardless.
    const why = isGrpcDeadlineError(error)
      ? `no worker answered within ${STATUS_DEADLINE_MS / 1000} s`
      : rootReason(error);
    return {
      progress: null,
      error: `progress not available: ${why}`,
      retrying: await retrying,
      ...(await waits),
    };
  }
}

interface ExecutionRow {
  workflowId: string;
  runId: string;
  status: PassStatus;
  startedAt: number;
  closedAt: number | null;
}

interface MirrorRows {
  current?: ExecutionRow;
  last?: ExecutionRow;
  lastCompleted?: ExecutionRow;
}

/**
 * Per mirror workflow id: its running run, its newest closed pass and its newest completed
 * one (a run that continued as new is not a pass of its own).
 */
async function mirrorExecutions(client: Client, config: Config): Promise<Map<string, MirrorRows>> {
  const queue = config.temporal.taskQueue.replace(/'/g, "\\'");
  const byId = new Map<string, MirrorRows>();
  let seen = 0;
  for await (const execution of client.workflow.list({
    query: `WorkflowType = '${mirrorWorkflow.name}' AND TaskQueue = '${queue}'`,
  })) {
    if (++seen > MAX_EXECUTIONS) break;
    const status = RUN_STATUS[execution.status.name];
    const entry = byId.get(execution.workflowId) ?? {};
    byId.set(execution.workflowId, entry);
    if (!status) continue; // a run that continued as new is part of a longer pass
    const row: ExecutionRow = {
      workflowId: execution.workflowId,
      runId: execution.runId,
      status,
      startedAt: execution.startTime.getTime(),
      closedAt: execution.closeTime?.getTime() ?? null,
    };
    if (status === 'running') entry.current ??= row;
    else if (!entry.last || entry.last.startedAt < row.startedAt) entry.last = row;
    if (status === 'completed' && (entry.lastCompleted?.startedAt ?? -1) < row.startedAt) {
      entry.lastCompleted = row;
    }
  }
  return byId;
}

async function passView(
  client: Client,
  config: Config,
  row: ExecutionRow | undefined,
  cache: ClosedRunCache,
): Promise<PassView | null> {
  if (!row) return null;
  const outcome =
    row.status === 'running'
      ? await runningProgress(client, row.workflowId, row.runId)
      : { ...(await closedRun(client, row.workflowId, row.runId, cache)), retrying: null };
  // The destination may be a Postgres URL with its password: the report never holds one.
  const progress = outcome.progress && {
    ...outcome.progress,
    destination: maskCredentials(outcome.progress.destination),
  };
  return {
    ...row,
    progress,
    // Canceled is what its status says; Temporal's 'Workflow canceled' adds nothing.
    error: row.status === 'canceled' ? null : outcome.error,
    retrying: outcome.retrying,
    ...('slotWaitUntil' in outcome && outcome.slotWaitUntil !== undefined
      ? { slotWaitUntil: outcome.slotWaitUntil }
      : {}),
    ...('workerWait' in outcome && outcome.workerWait !== undefined
      ? { workerWait: outcome.workerWait }
      : {}),
    ...('busy' in outcome && outcome.busy !== undefined ? { busy: outcome.busy } : {}),
    uiUrl: workflowUiUrl(config, row.workflowId, row.runId),
  };
}

/**
 * What needs a person: a connection to re-authorize, a mirror whose last pass failed, a
 * running pass whose activity failed RETRY_PROBLEM_ATTEMPT - 1 times in a row (a destination or
 * the service away; a rate limit or a paused connection is a wait, not a problem), a
 * schedule whose newest run failed, was terminated or timed out (a skipped run completed; a
 * cancelled one was someone's choice), an active schedule with no next run.
 */
/** What `findProblems` looks at: the sections of a status, those not read left out. */
export interface ProblemSources {
  connections?: readonly ConnectionView[];
  mirrors?: readonly MirrorView[];
  schedules?: readonly ScheduleStatusView[];
  inbox?: InboxView;
  receiver?: WebhookReceiverView;
  automations?: AutomationEndpointsView;
  /** Why the workers polling the task queue cannot open each other's payloads (keysApartLine). */
  workerKeys?: string;
  /**
   * When each active connection was last connected (epoch ms): its workflow's start, or its
   * last reconnect (a `needs_reauth` connection authorized again). A newer one outdates a
   * failure.
   */
  connectedAt?: ReadonlyMap<string, number>;
}

/**
 * The first gap line of a pass, and how many more: the count before it is the whole pass's,
 * which one gap alone would seem to account for.
 */
function gapsShown(gaps: readonly string[]): string {
  const [first] = gaps;
  if (first === undefined) return '';
  const more = gaps.length - 1;
  return more > 0
    ? ` (${first}; and ${more} more gap line${more === 1 ? '' : 's'})`
    : ` (${first})`;
}

export function findProblems(sources: ProblemSources, now = Date.now()): Problem[] {
  const { connections = [], mirrors = [], schedules = [], receiver, automations } = sources;
  const inbox = sources.inbox ?? { store: '', error: null, connections: [] };
  const problems: Problem[] = [];
  if (sources.workerKeys) {
    problems.push({ connectionId: '', kind: 'worker_keys_differ', message: sources.workerKeys });
  }
  for (const c of connections) {
    if (c.state === 'not_answering') {
      problems.push({
        connectionId: c.connectionId,
        kind: 'not_answering',
        message: `connection ${c.connectionId}: ${c.lastError ?? 'its workflow did not answer'}`,
      });
      continue;
    }
    if (
      c.state === 'active' &&
      c.lastError !== null &&
      c.accessExpiresAt !== null &&
      c.accessExpiresAt <= now
    ) {
      // Its refresh keeps failing (cli/refresh-retry.ts says so while it is retried): the
      // connection is not lost, but nothing reads the service for it until a refresh succeeds.
      problems.push({
        connectionId: c.connectionId,
        kind: 'refresh_failing',
        message: `connection ${c.connectionId}: its access token expired at ${new Date(c.accessExpiresAt).toISOString()} and refreshing it fails (${c.lastError}); its syncs cannot read the service until a refresh succeeds (is the service's authorization server reachable?)`,
      });
      continue;
    }
    if (c.state !== 'needs_reauth') continue;
    const why = c.lastError ? ` (${c.lastError})` : '';
    problems.push({
      connectionId: c.connectionId,
      kind: 'needs_reauth',
      message: `connection ${c.connectionId} needs re-authorization${why}: run '${reconnectCommand(c.connectionId, c.kind)}'`,
    });
  }
  for (const m of mirrors) {
    const into = m.destination ? ` into ${m.destination}` : '';
    const retrying = m.current?.retrying;
    if (retrying && isRetryProblem(retrying)) {
      problems.push({
        connectionId: m.connectionId,
        kind: 'pass_retrying',
        message: `mirror of connection ${m.connectionId}${into}: ${retryLine(retrying, m.destination)}`,
      });
    }
    // A gone connection's ended passes are history: nothing runs them again, nothing to fix.
    if (m.connectionGone !== null) continue;
    const done = m.last?.progress;
    if (
      m.last?.status === 'completed' &&
      done &&
      isIncomplete(done.counts, done.forbidden, done.refusals)
    ) {
      // Ran to its end, but not everything arrived: that needs a person as much as a failure.
      const c = done.counts;
      const forbidden = done.forbidden ?? [];
      const what = [
        c.unreachable > 0 ? `${counted(c.unreachable, 'record')} unreachable` : '',
        c.refused > 0 ? `${c.refused} refused by the destination` : '',
        partlyWritten(done) ? 'records written only in part' : '',
        forbidden.length > 0
          ? `${counted(forbidden.length, 'list')} its credential may not read (${forbidden.map((line) => line.split(':')[0]).join(', ')})`
          : '',
      ].filter(Boolean);
      problems.push({
        connectionId: m.connectionId,
        kind: 'last_pass_incomplete',
        message: `mirror of connection ${m.connectionId}${into}: last pass incomplete: ${what.join(', ')}${gapsShown(done.gaps)}`,
      });
      continue;
    }
    if (!m.last || m.last.status === 'completed') continue;
    // A pass running now supersedes a cancelled one; a failure stays until a pass completes.
    if (m.last.status === 'canceled' && m.current) continue;
    // Failed before the connection was connected anew (its advice was to connect it): what it
    // said is outdated, the failure stands until a pass completes.
    const connected = sources.connectedAt?.get(m.connectionId);
    if (connected !== undefined && connected > (m.last.closedAt ?? m.last.startedAt)) {
      problems.push({
        connectionId: m.connectionId,
        kind: 'last_pass_failed',
        message: `mirror of connection ${m.connectionId}${into}: last pass ${m.last.status.replace('_', ' ')}${m.last.error ? ` (${m.last.error})` : ''} before the connection was connected again (${new Date(connected).toISOString()}); '${syncAgainCommand(m.connectionId, m.destination)}' runs it again`,
      });
      continue;
    }
    problems.push({
      connectionId: m.connectionId,
      kind: 'last_pass_failed',
      message:
        m.last.status === 'canceled'
          ? `mirror of connection ${m.connectionId}${into}: last pass canceled before it ended; '${syncAgainCommand(m.connectionId, m.destination)}' runs it again`
          : `mirror of connection ${m.connectionId}${into}: last pass ${m.last.status.replace('_', ' ')}${m.last.error ? `: ${m.last.error}` : ''}`,
    });
  }
  for (const sc of schedules) {
    // Active with no next time: its spec matches no date (Temporal keeps next times for a
    // paused one too, and an interval always has one), so it never runs and nothing says so.
    if (!sc.paused && sc.nextRunAt === null) {
      problems.push({
        connectionId: sc.connectionId ?? sc.scheduleId,
        kind: 'schedule_never_runs',
        message: `schedule ${sc.scheduleId}: active but never runs: Temporal finds no date its spec matches; 'ebsync schedule delete ${sc.scheduleId}' removes it`,
      });
    }
    if (!sc.lastRun || !FAILED_RUN.has(sc.lastRun.status)) continue;
    problems.push({
      connectionId: sc.connectionId ?? sc.scheduleId,
      kind: 'schedule_last_run_failed',
      message: `schedule ${sc.scheduleId}: last run ${sc.lastRun.status.replace('_', ' ')}${sc.lastRun.error ? `: ${sc.lastRun.error}` : ''}`,
    });
  }
  // Unread, nothing about it is known: notices may be waiting for hours unseen.
  if (inbox.error !== null) {
    problems.push({
      connectionId: '',
      kind: 'webhook_inbox_unreadable',
      message: `webhook inbox (${inbox.store}) could not be read: ${inbox.error}; whether notices wait there is not known`,
    });
  }
  if (automations && automations.error !== null) {
    problems.push({
      connectionId: '',
      kind: 'automations_unreadable',
      message: `automation endpoints could not be read: ${automations.error}; whether changes reach them is not known`,
    });
  }
  for (const endpoint of automations?.endpoints ?? []) {
    if (endpoint.state !== 'unreadable') continue;
    problems.push({
      connectionId: '',
      kind: 'automations_unreadable',
      message: `automation endpoint ${endpoint.name} could not be opened: ${endpoint.disabledReason ?? 'unreadable'}; nothing is sent to it`,
    });
  }
  for (const c of inbox.connections) {
    if (c.oldestPendingAt === null || now - c.oldestPendingAt < WEBHOOKS_WAITING_MS) continue;
    problems.push({
      connectionId: c.connectionId,
      kind: 'webhooks_waiting',
      message:
        `webhooks of connection ${c.connectionId}: ${c.pending} notices waiting, the oldest for ${Math.round((now - c.oldestPendingAt) / 60_000)} min ` +
        // The drain answered, so a worker runs: what it was refused is why they wait.
        (c.lastRefusal === undefined
          ? '(is a worker running? see its log)'
          : `(the drain's last refusal: ${c.lastRefusal})`),
    });
  }
  if (receiver?.running && receiver.failedRecently > 0) {
    const last =
      receiver.lastFailedAt === null
        ? ''
        : `, the last ${Math.max(0, Math.round((now - receiver.lastFailedAt) / 60_000))} min ago`;
    problems.push({
      connectionId: '',
      kind: 'webhook_receiver_failing',
      message: `webhook receiver: ${receiver.failedRecently} ${receiver.failedRecently === 1 ? 'delivery' : 'deliveries'} not stored (answered 503) in the last ${RECENT_FAILURE_MINUTES} min${last}; senders retry them, but see its log (is the store reachable?)`,
    });
  }
  if (receiver?.running && receiver.spoolHeld > 0) {
    const since =
      receiver.spoolOldestAt === null
        ? ''
        : ` for ${Math.max(0, Math.round((now - receiver.spoolOldestAt) / 60_000))} min`;
    problems.push({
      connectionId: '',
      kind: 'webhook_receiver_spooling',
      message: `webhook receiver: ${receiver.spoolHeld} ${receiver.spoolHeld === 1 ? 'notice' : 'notices'} kept in its spool${since}, as the store cannot take them; they go to the store's inbox once it can (is the store reachable? see the receiver's log)`,
    });
  }
  // A sender signing with another secret (or clock) than the receiver's: each change it sends
  // is refused, and lost once it stops retrying. Not when a delivery verified since the last
  // refusal: a sender with the secret works, and the refusals were someone else's guesses.
  for (const refused of receiver?.running ? receiver.signatureRefused : []) {
    if (refused.lastVerifiedAt !== null && refused.lastVerifiedAt > refused.lastAt) continue;
    const ago = Math.max(0, Math.round((now - refused.lastAt) / 60_000));
    problems.push({
      connectionId: refused.connectionId,
      kind: 'webhook_signatures_refused',
      message: `webhook receiver: ${refused.count} ${refused.count === 1 ? 'delivery' : 'deliveries'} to connection ${refused.connectionId} refused in the last ${RECENT_FAILURE_MINUTES} min (the last ${ago} min ago) for a signature its registered secret does not verify or a timestamp off this machine's clock; the receiver's log says which. If the service signs with another secret, register it again ('ebsync webhooks register ${refused.connectionId} --secret-stdin'); each change refused is lost once the service stops retrying`,
    });
  }
  // Not running where it is expected (its port is known) while senders deliver to it.
  if (
    receiver &&
    !receiver.running &&
    receiver.error !== PORT_UNKNOWN &&
    receiver.registered.length > 0
  ) {
    problems.push({
      connectionId: '',
      kind: 'webhook_receiver_down',
      message: `webhook receiver not running at ${receiver.endpoint.replace(/\/webhooks\/_stats$/, '')} (${receiver.error ?? 'no answer'}) while ${receiver.registered.join(', ')} ${receiver.registered.length === 1 ? 'has' : 'have'} webhooks registered: their deliveries are not received; start it ('ebsync webhooks serve', or 'npm start')`,
    });
  }
  // Each line once: the same problem said twice (a schedule Temporal listed twice) adds only
  // noise, and would count twice in the exit's 'N problems'.
  const said = new Set<string>();
  return problems.filter((p) => !said.has(p.message) && said.add(p.message));
}

/**
 * Sets connectionGone on the mirrors whose connection no longer exists and that no schedule
 * runs: after `ebsync disconnect` and `ebsync schedule delete`, the last pass failed keeps no
 * status red for ever. Asked only of connections not running and not scheduled (Temporal's
 * description of their workflow, once per connection); one that cannot be described now
 * stays as it was, its failures problems.
 */
async function markGoneConnections(
  client: Client,
  mirrors: MirrorView[],
  connections: readonly ConnectionView[],
  schedules: readonly ScheduleStatusView[],
): Promise<void> {
  const kept = new Set([
    ...connections.map((c) => c.connectionId),
    ...schedules.flatMap((s) => (s.connectionId === null ? [] : [s.connectionId])),
  ]);
  const asked = new Map<string, Promise<string | null>>();
  for (const m of mirrors) {
    if (kept.has(m.connectionId)) continue;
    if (!asked.has(m.connectionId)) {
      asked.set(
        m.connectionId,
        connectionGone(client, m.connectionId).catch(() => null),
      );
    }
    m.connectionGone = await asked.get(m.connectionId)!;
  }
}

/** How long the status waits for a drain's answer about why its notices wait. */
const DRAIN_QUERY_MS = 2_000;

/**
 * Asks the drain of each connection whose notices wait why (its last refusal): the notices of
 * a registration into another connection's destination waited with nothing in the status
 * but "is a worker running?". A drain no worker answers for within the wait says nothing.
 */
export async function addDrainRefusals(client: Client, inbox: InboxView): Promise<void> {
  await Promise.all(
    inbox.connections
      .filter((c) => c.pending > 0)
      .map(async (c) => {
        const handle = client.workflow.getHandle(drainWorkflowId(c.connectionId));
        // The call's own deadline, as the other queries here: no timer outlives the answer.
        const refusal = await client
          .withDeadline(Date.now() + DRAIN_QUERY_MS, () => handle.query(drainStatusQuery))
          .then(
            (status) => status.lastRefusal,
            () => null,
          );
        if (refusal !== null) c.lastRefusal = refusal;
      }),
  );
}

/** A notice waiting this long in the inbox is a problem: no drain is applying them. */
export const WEBHOOKS_WAITING_MS = 5 * 60_000;

/** Everything the status page and `ebsync status` show. */
export async function collectStatus(
  client: Client,
  config: Config,
  options: {
    cache?: ClosedRunCache;
    runCache?: RunOutcomeCache;
    /** Ends its Temporal calls (the status page closing). */
    signal?: AbortSignal;
  } = {},
): Promise<StatusReport> {
  // Its sections are gathered at once; when one fails the report fails, and the others' calls
  // are cancelled with it rather than left retrying for a report no one will read.
  const gathering = new AbortController();
  const signal = options.signal
    ? AbortSignal.any([options.signal, gathering.signal])
    : gathering.signal;
  try {
    return await client.withAbortSignal(signal, () => gatherStatus(client, config, options));
  } finally {
    gathering.abort();
  }
}

async function gatherStatus(
  client: Client,
  config: Config,
  options: { cache?: ClosedRunCache; runCache?: RunOutcomeCache },
): Promise<StatusReport> {
  const cache: ClosedRunCache =
    options.cache ?? new Map<string, Pick<PassView, 'progress' | 'error'>>();
  // Read once: whether to ask the connections, and whose keys the workers hold.
  const pollers = queuePollers(client, config);
  const [answers, executions, schedules, webhooks, automations, inbox, workerKeys] =
    await Promise.all([
      askConnections(client, config, STATUS_DEADLINE_MS, pollers),
      mirrorExecutions(client, config),
      scheduleSection(client, config, options.runCache ?? (new Map() as RunOutcomeCache)),
      webhookSection(config),
      automationSection(config),
      // The drains are asked why notices wait as soon as the inbox says which wait, beside
      // the other sections rather than after them.
      inboxSection(config).then(async (inbox) => {
        await addDrainRefusals(client, inbox);
        return inbox;
      }),
      // Not known when the task queue cannot be described now: nothing said then.
      pollers.then(
        (identities) => keysApartLine(config.temporal.taskQueue, identities),
        () => undefined,
      ),
    ]);
  const generatedAt = Date.now();
  const connections: ConnectionView[] = answers.statuses.map((s) => {
    const workflowId = connectionWorkflowId(s.connectionId);
    const perMinute = (s.rateLimitedMinutes ?? []).filter(
      ([start]) => start > generatedAt - LIMIT_WINDOW_MS,
    );
    return {
      connectionId: s.connectionId,
      businessName: s.businessName ?? null,
      kind: s.kind,
      state: s.state,
      lastError: s.lastError,
      accessExpiresAt: s.accessExpiresAt ?? null,
      rateLimited: { lastHour: perMinute.reduce((sum, [, n]) => sum + n, 0), perMinute },
      workflowId,
      uiUrl: workflowUiUrl(config, workflowId),
    };
  });
  // A connection whose workflow no worker answered is shown as such; the rest of the report stands.
  for (const silent of answers.silent) {
    connections.push({
      connectionId: silent.connectionId,
      businessName: null,
      kind: 'unknown',
      state: 'not_answering',
      lastError: silentReason(silent, config.temporal.taskQueue, STATUS_DEADLINE_MS),
      accessExpiresAt: null,
      rateLimited: { lastHour: 0, perMinute: [] },
      workflowId: silent.workflowId,
      uiUrl: workflowUiUrl(config, silent.workflowId),
    });
  }
  connections.sort((a, b) => a.connectionId.localeCompare(b.connectionId));
  // With no worker, a pass that did not complete cannot say where it wrote (only a worker
  // answers its progress query): a schedule's memo says where the mirror it runs writes.
  const scheduledInto = new Map(
    schedules.flatMap((s) =>
      s.mirrorWorkflowId && s.destination ? [[s.mirrorWorkflowId, s.destination] as const] : [],
    ),
  );
  const mirrors = await Promise.all(
    [...executions].map(async ([workflowId, rows]): Promise<MirrorView> => {
      const before = rows.lastCompleted === rows.last ? undefined : rows.lastCompleted;
      const [current, last, lastCompleted] = await Promise.all([
        passView(client, config, rows.current, cache),
        passView(client, config, rows.last, cache),
        passView(client, config, before, cache),
      ]);
      return {
        workflowId,
        connectionId: connectionOfMirror(workflowId),
        destination:
          current?.progress?.destination ??
          last?.progress?.destination ??
          lastCompleted?.progress?.destination ??
          scheduledInto.get(workflowId) ??
          null,
        current,
        last,
        lastCompleted,
        connectionGone: null,
      };
    }),
  );
  await markGoneConnections(client, mirrors, connections, schedules);
  mirrors.sort(
    (a, b) =>
      a.connectionId.localeCompare(b.connectionId) || a.workflowId.localeCompare(b.workflowId),
  );
  const destinations = [
    ...new Set(mirrors.flatMap((m) => (m.destination ? [m.destination] : []))),
  ].sort();
  return {
    generatedAt,
    temporal: {
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      uiUrl: config.temporal.uiUrl,
    },
    connections,
    mirrors,
    destinations,
    schedules,
    webhooks,
    inbox,
    automations,
    rateLimitedLastHour: connections.reduce((sum, c) => sum + c.rateLimited.lastHour, 0),
    problems: findProblems(
      {
        connections,
        mirrors,
        schedules,
        inbox,
        receiver: webhooks,
        automations,
        ...(workerKeys ? { workerKeys } : {}),
        connectedAt: new Map(
          answers.statuses
            .filter((c) => c.state === 'active')
            .map((c) => [c.connectionId, Math.max(c.connectedAt, c.reconnectedAt ?? 0)] as const),
        ),
      },
      generatedAt,
    ),
  };
}

/** Members that hold ebsync's own addresses (masked already), never a customer's data. */
const OWN_ADDRESSES = new Set(['destination', 'destinations', 'uiUrl', 'endpoint', 'url']);

function masked(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return OWN_ADDRESSES.has(key) ? value : withoutCustomerData(value);
  if (Array.isArray(value)) return value.map((item) => masked(item, key));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(v, k)]));
}

/**
 * The report as the status page serves it to anyone who reaches it (it asks for no login):
 * the refusal texts of CRMs and the service can quote a customer's e-mail or phone (a
 * duplicate's key, an invalid value), and those are masked in every text of the report.
 * `ebsync status` in a terminal shows them as they are.
 */
export function publicReport(report: StatusReport): StatusReport {
  return masked(report) as StatusReport;
}
