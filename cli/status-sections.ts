import {
  ChildWorkflowFailure,
  TerminatedFailure,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { existsSync } from 'node:fs';
import type { Config } from '../config/index.js';
import {
  isPostgresUrl,
  maskCredentials,
  sqliteIdentity,
  sqlitePathOf,
  storeLocation,
} from '../config/database-locations.js';
import {
  latencyQuantile,
  receiverStatsSchema,
  type ReceiverStats,
} from '../webhooks/receiver-stats.js';
import { receiverOrigin, recordedReceiver } from '../worker/receiver-address.js';
import { receiverStatsToken } from '../worker/receiver-stats-token.js';
import { webhookRegistrationsFile } from '../worker/webhook-registrations-file.js';
import { registeredConnectionIds } from '../store/webhook-registrations.js';
import { listMirrorSchedules } from './schedule-views.js';
import { describeWorkflow } from './workflow-describe.js';
import { passWaitWords } from './pass-retry.js';
import { configuredEndpoints, type EndpointView } from './webhook-automations.js';

/** How long the status waits for the webhook receiver's counters before calling it down. */
const RECEIVER_TIMEOUT_MS = 1_000;
/** Deliveries per minute are the mean of this many last minutes. */
const RATE_MINUTES = 5;

export type RunStatus =
  'running' | 'completed' | 'failed' | 'canceled' | 'terminated' | 'timed_out';

export const RUN_STATUS: Record<string, RunStatus | undefined> = {
  RUNNING: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'canceled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
};

/** How a run that is over ended, in words ('timed out'); undefined while it runs. */
export function endedWords(status: RunStatus): string | undefined {
  return status === 'running' ? undefined : status.replace('_', ' ');
}

/** A run that did not complete and nobody cancelled on purpose: it needs a person. */
export const FAILED_RUN: ReadonlySet<RunStatus> = new Set(['failed', 'terminated', 'timed_out']);

/** A mirror schedule as the status shows it (from the same listing as `ebsync schedule list`). */
export interface ScheduleStatusView {
  scheduleId: string;
  connectionId: string | null;
  /** e.g. `every 15m` or `cron '0 3 * * *' (UTC)`. */
  when: string | null;
  what: string | null;
  mode: string | null;
  /** Where its runs mirror to, masked (from its memo). */
  destination: string | null;
  /** The mirror workflow its runs start. */
  mirrorWorkflowId: string | null;
  paused: boolean;
  note: string | null;
  /** Epoch ms; null when paused, or (active) when its spec matches no date: it never runs. */
  nextRunAt: number | null;
  /** The newest run the schedule started; null before its first. */
  lastRun: {
    workflowId: string;
    startedAt: number;
    status: RunStatus;
    error: string | null;
    /**
     * A completed run that started no pass, and why: a full run while a pass of its mirror
     * was running (workflows/scheduled-mirror.ts). Absent otherwise.
     */
    skipped?: string;
    /**
     * A running run that waits, and on what: one that has not started its pass, behind another
     * pass of its mirror (an incremental run, workflows/scheduled-mirror.ts), or one whose pass
     * waits (its requests held for their rate slot, a paused connection). Absent otherwise.
     */
    waiting?: string;
    uiUrl: string;
  } | null;
  uiUrl: string;
}

/** The webhook receiver's counters, read from its `GET /webhooks/_stats`. */
export interface WebhookReceiverView {
  /** Where the status looked (the configured receiver address). */
  endpoint: string;
  running: boolean;
  /** Why it is shown as not running. */
  error: string | null;
  /** Mean over the last 5 minutes. */
  deliveriesPerMinute: number;
  delivered: number;
  rejected: number;
  failed: number;
  /** Of them, answered in the last RECENT_FAILURE_MINUTES, and when the last was. */
  failedRecently: number;
  lastFailedAt: number | null;
  /**
   * Notices held in the receiver's spool because the store could not take them, and when the
   * oldest was kept (webhooks/spooled-store.ts); 0 and null for a receiver without a spool.
   */
  spoolHeld: number;
  spoolOldestAt: number | null;
  /** Deliveries to a registered connection refused for their signature, last RECENT_FAILURE_MINUTES. */
  signatureRefused: {
    connectionId: string;
    count: number;
    lastAt: number;
    lastVerifiedAt: number | null;
  }[];
  /**
   * Connections with webhooks registered in this data dir: their senders deliver to this
   * receiver, so one not running refuses them all.
   */
  registered: string[];
  /** Delivery → stored in the inbox, bucket bounds of the histogram; null before any. */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  /** The last hour by minute: [minute start, mean latency ms or null]. */
  latencySeries: [number, number | null][];
  /** Epoch ms the receiver process started counting. */
  since: number | null;
}

/** Ended runs never change: their outcome is kept between reports. */
export type RunOutcomeCache = Map<
  string,
  { status: RunStatus; error: string | null; skipped?: string }
>;

/** The message of the deepest cause: the mirror's own reason, not its wrappers'. */
export function rootReason(error: unknown): string {
  let current: unknown = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  const message = current instanceof Error ? current.message : String(current);
  return message.replace(/^mirror pass failed: /, '');
}

/** The most of an operator's termination reason a report line shows. */
const REASON_CHARS = 200;

/**
 * Operator text (the reason given to `temporal workflow terminate`) as a line of the report:
 * its first line, at most REASON_CHARS long. The rest stays in the Temporal UI.
 */
export function oneLine(text: string): string {
  const first = (text.trim().split(/\r?\n/, 1)[0] ?? '').trim();
  return first.length > REASON_CHARS ? `${first.slice(0, REASON_CHARS - 1)}…` : first;
}

/** A terminated run's reason, from its close event (the run's failure carries it). */
function terminatedReason(failure: unknown): string | null {
  return failure instanceof WorkflowFailedError && failure.cause instanceof TerminatedFailure
    ? oneLine(failure.cause.message)
    : null;
}

/**
 * Why a run that did not complete ended, in one line. A terminated run says the reason it
 * was terminated with; a run that failed because the mirror pass it started was terminated
 * says that pass's reason too: Temporal tells the parent only 'Terminated', the reason is in
 * the pass's own close event, read here (one event; nothing when it is gone).
 */
export async function endedReason(client: Client, failure: unknown): Promise<string> {
  const terminated = terminatedReason(failure);
  if (terminated !== null) return terminated;
  let current: unknown = failure;
  while (current instanceof Error) {
    if (current instanceof ChildWorkflowFailure && current.cause instanceof TerminatedFailure) {
      const { workflowId, runId } = current.execution;
      const reason = workflowId
        ? await client.workflow
            .getHandle(workflowId, runId ?? undefined, { followRuns: false })
            .result()
            .then(
              () => null,
              (error: unknown) => terminatedReason(error),
            )
        : null;
      return reason ? `mirror pass terminated: ${reason}` : 'mirror pass terminated';
    }
    current = current.cause;
  }
  return rootReason(failure);
}

/**
 * What a running scheduled run waits behind, or on: undefined when the pass of its mirror running
 * is its own (its child) and that pass is at work. An incremental run whose mirror already runs a pass (another schedule's,
 * `ebsync sync`'s) waits for that pass and asks again every 30 s (workflows/scheduled-mirror.ts):
 * Temporal shows it running all the while, behind back-to-back full passes for as long as they
 * come, and so did the status.
 */
async function waitingBehind(
  client: Client,
  runId: string,
  mirrorWorkflowId: string | null,
): Promise<string | undefined> {
  if (mirrorWorkflowId === null) return undefined;
  const mirror = await describeWorkflow(client, mirrorWorkflowId);
  // No pass running: the run is starting its own, or has just ended it (a run that waited
  // sees the pass it waited behind gone within 30 s and starts its own).
  if (mirror?.status.name !== 'RUNNING') return undefined;
  // A pass keeps its parent across continue-as-new: the run that started it.
  const parent = mirror.parentExecution?.workflowId;
  // Its own pass: "running" unless the pass itself waits (its requests held for their rate
  // slot, a paused connection), which Temporal shows as running too.
  if (parent === runId) {
    const wait = await passWaitWords(mirror, client.options.loadedDataConverter);
    return wait === undefined ? undefined : `on its pass ${mirrorWorkflowId}: ${wait}`;
  }
  return `behind the running pass ${mirrorWorkflowId}, started by ${parent ?? "'ebsync sync' or 'npm start'"}`;
}

async function runOutcome(
  client: Client,
  workflowId: string,
  cache: RunOutcomeCache,
  mirrorWorkflowId: string | null,
): Promise<{ status: RunStatus; error: string | null; skipped?: string; waiting?: string }> {
  const known = cache.get(workflowId);
  if (known) return known;
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe();
  const status = RUN_STATUS[description.status.name] ?? 'running';
  if (status === 'running') {
    const waiting = await waitingBehind(client, workflowId, mirrorWorkflowId);
    return { status, error: null, ...(waiting !== undefined ? { waiting } : {}) };
  }
  let error: string | null = null;
  let skipped: string | undefined;
  if (status !== 'completed') {
    error = await handle.result().then(
      () => null,
      (failure: unknown) => endedReason(client, failure),
    );
  } else {
    // A run that skipped its pass completed too: "last run completed" said a pass ran.
    const result = (await handle.result().catch(() => undefined)) as
      { outcome?: unknown; reason?: unknown } | undefined;
    if (result?.outcome === 'skipped' && typeof result.reason === 'string') skipped = result.reason;
  }
  const outcome = { status, error, ...(skipped !== undefined ? { skipped } : {}) };
  cache.set(workflowId, outcome);
  return outcome;
}

function uiBase(config: Config): string {
  return `${config.temporal.uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(config.temporal.namespace)}`;
}

/** The mirror schedules of this task queue, with their last run's outcome. */
export async function scheduleSection(
  client: Client,
  config: Config,
  cache: RunOutcomeCache,
): Promise<ScheduleStatusView[]> {
  const views = (await listMirrorSchedules(client)).views.filter(
    (v) => v.taskQueue === config.temporal.taskQueue,
  );
  return Promise.all(
    views.map(async (v): Promise<ScheduleStatusView> => {
      const newest = v.recentRuns.at(-1);
      let lastRun: ScheduleStatusView['lastRun'] = null;
      if (newest) {
        try {
          const outcome = await runOutcome(client, newest.workflowId, cache, v.mirrorWorkflowId);
          lastRun = {
            workflowId: newest.workflowId,
            startedAt: Date.parse(newest.takenAt),
            ...outcome,
            uiUrl: `${uiBase(config)}/workflows/${encodeURIComponent(newest.workflowId)}`,
          };
        } catch (error) {
          // Its history may be past the namespace's retention: no outcome to show then.
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        }
      }
      const next = v.nextRuns[0];
      return {
        scheduleId: v.scheduleId,
        connectionId: v.connectionId,
        when: v.when,
        what: v.what,
        mode: v.mode,
        destination: v.destination,
        mirrorWorkflowId: v.mirrorWorkflowId,
        paused: v.paused,
        note: v.note,
        nextRunAt: v.paused || next === undefined ? null : Date.parse(next),
        lastRun,
        uiUrl: `${uiBase(config)}/schedules/${encodeURIComponent(v.scheduleId)}`,
      };
    }),
  );
}

/** Where this machine reaches the configured receiver: a wildcard address means loopback. */
export function receiverStatsUrl(config: Config): string {
  return statsUrlAt(config.webhooks);
}

function statsUrlAt(at: { host: string; port: number }): string {
  return `${receiverOrigin(at, true)}/webhooks/_stats`;
}

function viewOfStats(
  endpoint: string,
  stats: ReceiverStats,
  registered: string[],
): WebhookReceiverView {
  const from = stats.now - RATE_MINUTES * 60_000;
  const recent = stats.minutes.filter(([start]) => start >= from);
  const delivered = recent.reduce((sum, [, count]) => sum + count, 0);
  return {
    endpoint,
    running: true,
    error: null,
    deliveriesPerMinute: Math.round((delivered / RATE_MINUTES) * 10) / 10,
    delivered: stats.delivered,
    rejected: stats.rejected,
    failed: stats.failed,
    failedRecently: stats.failedRecently ?? 0,
    lastFailedAt: stats.lastFailedAt ?? null,
    spoolHeld: stats.spool?.held ?? 0,
    spoolOldestAt: stats.spool?.oldestAt ?? null,
    signatureRefused: stats.signatureRefused ?? [],
    registered,
    latencyP50Ms: latencyQuantile(stats, 0.5),
    latencyP95Ms: latencyQuantile(stats, 0.95),
    latencySeries: stats.minutes.map(([start, , , latency]) => [start, latency]),
    since: stats.since,
  };
}

/**
 * The receiver's counters, or "not running" when nothing answers. A receiver of this data dir
 * that recorded where it listens (`--port`, `--host`, port 0) is asked there first; then the
 * configured address, where a receiver on another machine of a deployment is found.
 */
export async function webhookSection(config: Config): Promise<WebhookReceiverView> {
  const registered = registeredConnections(config);
  const configured = config.webhooks.port === 0 ? undefined : receiverStatsUrl(config);
  const recorded = recordedReceiver(config);
  const found = recorded ? statsUrlAt(recorded) : undefined;
  if (found !== undefined && found !== configured) {
    const view = await statsAt(found, config, registered);
    if (view.running || configured === undefined) return view;
  }
  // 0 is "a free port, picked when it starts": where that receiver listens is not known here.
  if (configured === undefined) {
    return receiverNotRunning(receiverStatsUrl(config), PORT_UNKNOWN, registered);
  }
  return statsAt(configured, config, registered);
}

/**
 * Why a receiver that answers shows no counters: it answers its counters only to loopback
 * callers with the token derived from its own encryption key, and answers anyone else as a
 * route it does not have.
 */
export const COUNTERS_REFUSED =
  "it refused this command's token for its counters: it runs with other encryption keys than this command (EBSYNC_ENCRYPTION_KEYS, or in development another EBSYNC_DATA_DIR), or on another machine";

/** Whether a 404 is the receiver's own refusal of `_stats` (its error shape), not a stranger's. */
async function refusedOurToken(res: Response): Promise<boolean> {
  const body = (await res.json().catch(() => null)) as { reason?: unknown } | null;
  return body?.reason === 'route_unknown';
}

async function statsAt(
  endpoint: string,
  config: Config,
  registered: string[],
): Promise<WebhookReceiverView> {
  try {
    const res = await fetch(endpoint, {
      headers: { authorization: `Bearer ${receiverStatsToken(config)}` },
      // The token is for the receiver at this address only.
      redirect: 'error',
      signal: AbortSignal.timeout(RECEIVER_TIMEOUT_MS),
    });
    if (res.status === 404 && (await refusedOurToken(res))) {
      // An ebsync receiver answers there, and took this command's token for no token.
      return { ...receiverNotRunning(endpoint, COUNTERS_REFUSED, registered), running: true };
    }
    if (!res.ok) throw new Error(`it answered ${res.status}`);
    return viewOfStats(endpoint, receiverStatsSchema.parse(await res.json()), registered);
  } catch (error) {
    const why =
      error instanceof Error
        ? ((error.cause as Error | undefined)?.message ?? error.message)
        : String(error);
    return receiverNotRunning(endpoint, why, registered);
  }
}

/** The connections with webhooks registered in this data dir; none when it has no file. */
function registeredConnections(config: Config): string[] {
  const file = webhookRegistrationsFile(config);
  if (!existsSync(file)) return [];
  try {
    return registeredConnectionIds(file);
  } catch {
    // Unreadable here (another user's file, say): the receiver's own line still shows.
    return [];
  }
}

/** Why the status of a receiver on EBSYNC_WEBHOOK_PORT=0 is not known. */
export const PORT_UNKNOWN =
  'EBSYNC_WEBHOOK_PORT is 0, a free port picked when the receiver starts, and no receiver of this data dir runs on this machine to say which; set EBSYNC_WEBHOOK_PORT to the one it printed to see it';

/** The receiver's section when nothing answered at `endpoint`, and why. */
export function receiverNotRunning(
  endpoint: string,
  why: string,
  registered: string[] = [],
): WebhookReceiverView {
  return {
    endpoint,
    running: false,
    error: why,
    deliveriesPerMinute: 0,
    delivered: 0,
    rejected: 0,
    failed: 0,
    failedRecently: 0,
    lastFailedAt: null,
    spoolHeld: 0,
    spoolOldestAt: null,
    signatureRefused: [],
    registered,
    latencyP50Ms: null,
    latencyP95Ms: null,
    latencySeries: [],
    since: null,
  };
}

/** The automation endpoints, their state as `ebsync webhooks endpoints list` shows it. */
export interface AutomationEndpointsView {
  endpoints: EndpointView[];
  /** Why the endpoints could not be read (e.g. other EBSYNC_ENCRYPTION_KEYS than the workers'); else null. */
  error: string | null;
}

/** The data dir's automation endpoints, never their secrets (URLs masked to their origin). */
export async function automationSection(config: Config): Promise<AutomationEndpointsView> {
  try {
    return { endpoints: await configuredEndpoints(config), error: null };
  } catch (error) {
    return { endpoints: [], error: error instanceof Error ? error.message : String(error) };
  }
}

/** One connection's webhook inbox: what waits, since when, and how fast the drain goes. */
export interface InboxConnectionView {
  connectionId: string;
  /** Notices stored and not applied yet. */
  pending: number;
  /** Epoch ms the oldest of them was stored; null when none waits. */
  oldestPendingAt: number | null;
  /** Notices applied in the last minute, and as a rate. */
  drainedLastMinute: number;
  drainedPerSecond: number;
  /**
   * Where notices wait, the drain's last refusal (its drainStatus query): a destination another
   * connection writes, a grant revoked. Absent when not asked or when no worker answered.
   */
  lastRefusal?: string;
}

/** The store's webhook inbox (the receiver stores notices, the drains apply them). */
export interface InboxView {
  /** The store, without credentials. */
  store: string;
  /** Why it could not be read; else null. */
  error: string | null;
  connections: InboxConnectionView[];
}

/** The drain rate is the mean of this last window. */
const DRAIN_WINDOW_MS = 60_000;

/**
 * The inbox's depth, oldest pending notice and drain rate per connection, from the store
 * (EBSYNC_STORE_URL). An SQLite store that does not exist yet has nothing to show, and is not
 * created by looking.
 */
export async function inboxSection(config: Config): Promise<InboxView> {
  const location = storeLocation(config);
  let store = location;
  try {
    if (!isPostgresUrl(location)) {
      const path = sqlitePathOf(location);
      store = sqliteIdentity(path);
      if (!existsSync(path)) return { store, error: null, connections: [] };
    }
    // Loaded here: the store's drivers (pg among them) are no cost of a status without one.
    const { openInbox } = await import('../store/open-inbox.js');
    const inbox = await openInbox(location);
    try {
      store = inbox.location;
      const stats = await inbox.stats(DRAIN_WINDOW_MS);
      return {
        store,
        error: null,
        connections: stats.map((s) => ({
          connectionId: s.connectionId,
          pending: s.pending,
          oldestPendingAt: s.oldestPendingAt?.getTime() ?? null,
          drainedLastMinute: s.drained,
          // Two decimals: one notice a minute is 0.02/s, never a "0/s" beside a count above 0.
          drainedPerSecond: Math.round((s.drained / (DRAIN_WINDOW_MS / 1000)) * 100) / 100,
        })),
      };
    } finally {
      await inbox.close();
    }
  } catch (error) {
    return {
      store: maskCredentials(store),
      error: error instanceof Error ? error.message : String(error),
      connections: [],
    };
  }
}
