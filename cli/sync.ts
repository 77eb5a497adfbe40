import { jsonText, printable, report, shownSafely } from './shown-text.js';
import { scrubText } from '../worker/redact.js';
import { createHash } from 'node:crypto';
import { existsSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import {
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import cliProgress from 'cli-progress';
import { type Config } from '../config/index.js';
import { loadStartupConfig, shellDir } from './startup-config.js';
import { DestinationTargetError } from '../destinations/errors.js';
import {
  destinationIdentity,
  parseDestinationTarget,
} from '../destinations/destination-targets.js';
import { CONNECTION_RULE_TEXT, isConnectionName } from '../config/connection-names.js';
import { maskCredentials, postgresDestinationId } from '../config/database-locations.js';
import { databaseMessage } from '../config/database-errors.js';
import { connectionGone } from '../activities/connection-tokens.js';
import { connectClient } from '../worker/temporal-client.js';
import { mirrorProgressQuery } from '../workflows/mirror-types.js';
import { mirrorWorkflow } from '../workflows/mirror.js';
import {
  MIRROR_SUBJECTS,
  mirrorWorkflowId,
  type MirrorInput,
  type MirrorProgress,
  type MirrorSubject,
} from '../workflows/mirror-types.js';
import {
  askConnections,
  sealedConnectionLine,
  silentLines,
  STATUS_DEADLINE_MS,
} from './connection-list.js';
import { connectionStatusWithin } from './connection-update.js';
import { reconnectCommand, shellWord, syncAgainCommand } from './reconnect-advice.js';
import { connectionWorkflowId, type ConnectionStatus } from '../workflows/connection-types.js';
import {
  asOfNow,
  endedAs,
  BAR_CELLS,
  barFraction,
  duration,
  exitCodeOf,
  progressLine,
  readCounts,
  readText,
  slowedLine,
  summaryText,
} from './mirror-summary.js';
import { runAction, UserError } from './errors.js';
import { refuseOtherWriter } from './destination-writer.js';
import { forgetMirror } from './mirror-forget.js';
import { describeWorkflow } from './workflow-describe.js';
import {
  busyActivityOf,
  busyLine,
  retryLine,
  retryOf,
  workerWaitLine,
  workerWaitOf,
  type BusyActivity,
  type RetryView,
  type WorkerWait,
} from './pass-retry.js';
import { pause } from '../activities/pause.js';
import { requireWorker, requireWorkerOf } from './worker-check.js';
import { causes, GRPC_DEADLINE_EXCEEDED, temporalAway } from './workflow-deadline.js';

/** A call Temporal did not answer in time (its long poll, a server restarting). */
const cutAtDeadline = (error: unknown): boolean =>
  causes(error).some((e) => isGrpcServiceError(e) && Number(e.code) === GRPC_DEADLINE_EXCEEDED);

export interface SyncRequest {
  subjects: MirrorSubject[];
  destination: string;
  full: boolean;
  /** Every record read is written again (MirrorInput.rewrite). */
  rewrite?: boolean;
  connectionId?: string;
  concurrency?: number;
  /** MirrorInput.credentialsVersion: only a pass asked for now knows it, not a schedule. */
  credentialsVersion?: number;
}

/**
 * `sqlite:PATH` (made absolute), `postgres://…`, `hubspot`, `pipedrive` or `salesforce` (address,
 * credentials from settings); anything else is bad input, exit 2.
 */
export function normalizeDestination(to: string): string {
  let target;
  try {
    target = parseDestinationTarget(to);
  } catch (error) {
    if (error instanceof DestinationTargetError) throw new UserError(`--to: ${error.message}`, 2);
    throw error;
  }
  if (target.kind === 'hubspot' || target.kind === 'pipedrive' || target.kind === 'salesforce') {
    return target.kind;
  }
  return target.kind === 'sqlite' ? `sqlite:${resolve(target.path)}` : to;
}

/**
 * A destination's name in workflow ids: stable, short, free of any password it holds, and one
 * per destination however its URL is written (another password or `?sslmode=` is the same
 * database, so a second sync attaches to the pass running there instead of racing it).
 */
export function destinationKey(destination: string): string {
  return createHash('sha256').update(destinationIdentity(destination)).digest('hex').slice(0, 12);
}

/** A path as a person would type it here: relative under the working directory, else absolute. */
export function displayPath(path: string): string {
  const rel = relative(shellDir(), path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/**
 * The flags that name this mirror again in a command shown to the user (the connection and
 * destination given, none of them when the defaults were meant): without them, `--status` and
 * `--cancel` would act on the default destination's mirror. A Postgres URL is named by its
 * database and schema only, as the mirror is, so no password is shown.
 */
export function mirrorFlags(flags: SyncFlags, connectionId: string, destination: string): string {
  const words: string[] = [];
  if (flags.connection !== undefined) words.push('--connection', connectionId);
  if (flags.to !== undefined) {
    const target = parseDestinationTarget(destination);
    words.push(
      '--to',
      target.kind === 'sqlite'
        ? `sqlite:${displayPath(target.path)}`
        : target.kind === 'postgres'
          ? postgresDestinationId(target.url, target.schema)
          : target.kind,
    );
  }
  return words.map((word) => ` ${shellWord(word)}`).join('');
}

export function defaultDestination(config: Config): string {
  return `sqlite:${resolve(config.dataDir, 'mirror.db')}`;
}

export function parseSubjects(value: string | undefined): MirrorSubject[] {
  if (value === undefined || value === 'all') return [...MIRROR_SUBJECTS];
  if ((MIRROR_SUBJECTS as readonly string[]).includes(value)) return [value as MirrorSubject];
  throw new UserError(
    `'${value}' is not something ebsync mirrors: expected leads, events, appointments or all`,
    2,
  );
}

export async function pickConnection(
  client: Client,
  config: Config,
  asked?: string,
): Promise<string> {
  if (asked) return asked;
  const { statuses, silent } = await askConnections(client, config);
  const unread = silentLines(silent, config.temporal.taskQueue, STATUS_DEADLINE_MS);
  const ids = [...statuses, ...silent].map((c) => c.connectionId).sort();
  if (ids.length === 0) {
    throw new UserError("no connection yet: run 'ebsync connect' first (or 'npm start' for demo)");
  }
  if (ids.length > 1) {
    // Which one was meant is the question, whatever the state of the others: one of them
    // unreadable (its workflow sealed with other keys, no worker answering) is said after it.
    throw new UserError(
      [`several connections (${ids.join(', ')}): choose one with --connection ID`, ...unread],
      2,
    );
  }
  if (unread.length > 0) throw new UserError(unread);
  return ids[0]!;
}

/** A name no connection could have is bad input (exit 2), said with the rule. */
export function requireConnectionName(id: string): void {
  if (!isConnectionName(id)) {
    throw new UserError(`connection '${id}' is not allowed: expected ${CONNECTION_RULE_TEXT}`, 2);
  }
}

/**
 * Connection `id` exists and runs, before anything is started (a mirror of a connection that
 * does not exist could never read a page): otherwise the line the worker would fail it with, exit 1.
 * Its form first: a name no connection could have is not "connect it" under a name
 * `ebsync connect --name` refuses.
 */
export async function requireConnection(client: Client, id: string): Promise<void> {
  requireConnectionName(id);
  const gone = await connectionGone(client, id);
  if (gone !== null) throw new UserError(gone);
}

/**
 * Why a connection needs re-authorization and what to run, when its workflow says it does
 * within the status deadline; undefined otherwise (active, or no worker answered in time).
 */
export async function reauthNeeded(
  client: Client,
  id: string,
  status?: ConnectionStatus,
): Promise<{ what: string; run: string } | undefined> {
  status ??= await connectionStatusNow(client, id);
  if (status?.state !== 'needs_reauth') return undefined;
  // The reason may quote the authorization server (its error_description): it is written
  // out here, for the lines that print `what` as it is.
  const why = status.lastError ? ` (${shownSafely(scrubText(status.lastError))})` : '';
  return {
    what: `connection '${id}' needs re-authorization${why}`,
    run: `run '${reconnectCommand(id, status.kind)}'`,
  };
}

/** The connection's status, or undefined when no worker answered within the deadline. */
function connectionStatusNow(client: Client, id: string): Promise<ConnectionStatus | undefined> {
  return connectionStatusWithin(
    client,
    connectionWorkflowId(id),
    STATUS_DEADLINE_MS,
    () => new Error('no answer'),
  ).catch(() => undefined);
}

/**
 * A connection that needs re-authorization: a pass of it would fail at its first request, so
 * none is started, and the line says what to run. Not known in time (no worker answered the
 * query): the pass is started and says so itself. Otherwise the connection's credentials
 * version, for the pass (MirrorInput.credentialsVersion).
 */
export async function refuseNeedsReauth(
  client: Client,
  config: Config,
  id: string,
): Promise<number | undefined> {
  // A workflow sealed with other keys never answers, and a pass of it would retry without
  // end: said first (one page of its history), rather than after the status's deadline.
  const sealed = await sealedConnectionLine(client, config, id);
  if (sealed !== null) throw new UserError(`${sealed}; nothing was started`);
  const status = await connectionStatusNow(client, id);
  const reauth = await reauthNeeded(client, id, status);
  if (reauth) throw new UserError(`${reauth.what}; nothing was started: ${reauth.run}`);
  return status?.credentialsVersion;
}

/**
 * Opens a database destination as the worker will (an SQLite file, made if missing; a Postgres
 * connection asked `SELECT 1`) so one that cannot be reached is said at once, instead of a
 * mirror retrying it without end. A CRM is not checked here: its token is a worker's setting,
 * which this command may not have; the mirror's own retries show in its progress line.
 * `ebsync sync` and `ebsync schedule create` both ask it; `refused` is what the command did not
 * do. It runs from this machine, which may not reach a database the workers reach: the line
 * says how to skip it.
 */
export async function checkDestination(
  destination: string,
  refused = 'nothing was started',
): Promise<void> {
  const target = parseDestinationTarget(destination);
  const refuse = (error: unknown): UserError =>
    new UserError(
      `cannot open destination ${maskCredentials(destination)}: ${maskCredentials(databaseMessage(error))}; ${refused} ` +
        `(opened from this machine: --no-check-destination skips the check)`,
    );
  if (target.kind === 'sqlite') {
    try {
      await checkSqliteFile(target.path);
    } catch (error) {
      throw refuse(error);
    }
  } else if (target.kind === 'postgres') {
    // Loaded only here: the Postgres driver is not needed by commands that never use it.
    const { createPostgresPool } = await import('../store/postgres-pool.js');
    const pool = createPostgresPool(target.url, { max: 1, applicationName: 'ebsync-check' });
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      throw refuse(error);
    } finally {
      await pool.end().catch(() => undefined);
    }
  }
}

/**
 * An SQLite destination checked as the worker will open it, leaving nothing behind: a file
 * that did not exist is made (with the directories it needs) to learn that it can be, then
 * removed with them, so a command that refuses, or runs its workers elsewhere, leaves no
 * empty database or folders (made as root, say) on this machine.
 */
async function checkSqliteFile(path: string): Promise<void> {
  const file = resolve(path);
  const { openMirrorFile } = await import('../store/sqlite-files.js');
  if (existsSync(file)) {
    openMirrorFile(file).close();
    return;
  }
  const made: string[] = [];
  for (let dir = dirname(file); !existsSync(dir); dir = dirname(dir)) made.push(dir);
  try {
    openMirrorFile(file).close();
  } finally {
    // Each step on its own: what could not be made cannot be removed either (ENOTDIR), and
    // the reason the open failed is what the user is told.
    const quietly = (remove: () => void): void => {
      try {
        remove();
      } catch {
        // Not there, or not empty: something else wrote there meanwhile, and it stays.
      }
    };
    for (const side of ['', '-wal', '-shm', '-journal']) {
      quietly(() => rmSync(`${file}${side}`, { force: true }));
    }
    for (const dir of made) quietly(() => rmdirSync(dir));
  }
}

/**
 * Checks that do not depend on each other, asked at once (each is a round trip to Temporal or
 * the destination), failing as the same checks asked one after the other would: with the
 * first failure in the order given.
 */
async function inOrder<T extends readonly unknown[]>(checks: {
  [K in keyof T]: Promise<T[K]> | T[K];
}): Promise<T> {
  const settled = await Promise.allSettled(checks);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** Whether the mirror `workflowId` is running now (then `ebsync sync` attaches to it). */
async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  return (await describeWorkflow(client, workflowId))?.status.name === 'RUNNING';
}

/**
 * The mirror's workflow id and input for a request: the one place both `ebsync sync` and a
 * schedule's action get them, so a scheduled pass is the same pass under the same id.
 */
export function mirrorRun(
  connectionId: string,
  request: SyncRequest,
): { workflowId: string; input: MirrorInput } {
  return {
    workflowId: mirrorWorkflowId(connectionId, destinationKey(request.destination)),
    input: {
      connectionId,
      destination: request.destination,
      subjects: request.subjects,
      mode: request.full ? 'full' : 'incremental',
      ...(request.rewrite ? { rewrite: true } : {}),
      ...(request.concurrency ? { concurrency: request.concurrency } : {}),
      ...(request.credentialsVersion !== undefined
        ? { credentialsVersion: request.credentialsVersion }
        : {}),
    },
  };
}

/** Starts the mirror, or attaches to the one already running for that connection and destination. */
export async function startOrAttach(
  client: Client,
  config: Config,
  request: SyncRequest,
): Promise<{ handle: WorkflowHandle<typeof mirrorWorkflow>; attached: boolean }> {
  const connectionId = await pickConnection(client, config, request.connectionId);
  const { workflowId, input } = mirrorRun(connectionId, request);
  try {
    const handle = await client.workflow.start(mirrorWorkflow, {
      taskQueue: config.temporal.taskQueue,
      workflowId,
      args: [input],
    });
    return { handle, attached: false };
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    return { handle: client.workflow.getHandle<typeof mirrorWorkflow>(workflowId), attached: true };
  }
}

/**
 * What the running pass a sync attached to does not cover of what was asked, in one line, or
 * null when it covers it (a full pass covers an incremental one; "all" covers every subject).
 * Unknown (no answer within the deadline) is not said.
 */
async function notTheAskedPass(
  handle: WorkflowHandle<typeof mirrorWorkflow>,
  subjects: readonly MirrorSubject[],
  full: boolean,
  rewrite: boolean,
): Promise<string | null> {
  const running = await handle.client
    .withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.query(mirrorProgressQuery))
    .catch(() => undefined);
  if (!running) return null;
  const missing = subjects.filter((subject) => !running.subjects.includes(subject));
  const rewrites = running.rewrite === true;
  if (missing.length === 0 && (!full || running.mode === 'full') && (!rewrite || rewrites)) {
    return null;
  }
  const asked = `${full ? 'full' : 'incremental'} pass of ${subjects.join(', ')}${rewrite ? ' rewriting every record' : ''}`;
  const runs = `${running.mode} pass of ${running.subjects.join(', ')}${rewrites ? ' rewriting every record' : ''}`;
  return (
    `the running pass is ${running.mode === 'incremental' ? 'an' : 'a'} ${runs}, not the ${asked} ` +
    `asked for, which was not started (one pass at a time per connection and destination); ` +
    `run it again once this one ends`
  );
}

/** The bar's scale: its fill is barFraction of this; the counts are said in words beside it. */
const BAR_SCALE = 1000;

/** How often a watched mirror is described for retrying activities (a call to Temporal each). */
const DESCRIBE_EVERY_MS = 2_000;
/** A progress query waits this long for a worker's answer; the next is asked after it. */
const QUERY_DEADLINE_MS = 5_000;
/** With no answer for this long, watching says no worker answers (once). */
const UNANSWERED_MS = 15_000;

/** A pass watched to its end: its last progress, and how its workflow ended (COMPLETED…). */
export interface EndedPass {
  progress: MirrorProgress;
  status: string;
}

/**
 * Shows a mirror's progress until it ends: a bar on a terminal, a line every few seconds
 * otherwise. Resolves with the final progress and how the pass ended (canceled from elsewhere
 * too); `detach` stops watching without stopping it.
 */
export async function watchMirror(
  handle: WorkflowHandle<typeof mirrorWorkflow>,
  options: WatchOptions,
): Promise<EndedPass | 'detached'> {
  try {
    return await watchUntilEnd(handle, options);
  } catch (error) {
    // Temporal's own words name a run id and nothing a user can act on.
    if (error instanceof WorkflowNotFoundError) throw new PassGoneError(handle.workflowId, options);
    throw error;
  }
}

/** How a pass is watched, and what starts a new one should Temporal lose it. */
export interface WatchOptions {
  detach: Promise<void>;
  interactive: boolean;
  /** The command that starts the pass again, as the user runs it. */
  again: string;
}

/**
 * The pass watched is no longer known to Temporal: a dev server started again on a new file
 * (or in memory) has none of the old runs, and a workflow can be deleted. The pass is not
 * running anywhere, so waiting on would wait for ever.
 */
export class PassGoneError extends UserError {
  constructor(workflowId: string, options: Pick<WatchOptions, 'again'>) {
    super(
      `the pass ${workflowId} is gone from Temporal, which no longer knows it (a server started ` +
        `again without its data, or the workflow deleted): it runs nowhere; what it wrote stays ` +
        `in the destination, and '${options.again}' starts a new pass`,
    );
  }
}

async function watchUntilEnd(
  handle: WorkflowHandle<typeof mirrorWorkflow>,
  options: WatchOptions,
): Promise<EndedPass | 'detached'> {
  let detached = false;
  // The caller closes the connection once this returns. A call still out then (the long poll
  // for the result, or a query, retried on a timer because Ctrl-C also stopped the dev server)
  // would throw "Channel has been shut down" out of that timer and crash the process. So both
  // are cancelled when watching stops (a detach at once, without waiting for an answer), and
  // settled before this returns. Each query has a signal of its own: a call leaves a listener
  // on its signal, and one signal for a query every 500 ms would keep a pass's worth of them.
  const waiting = new AbortController();
  let querying: AbortController | undefined;
  const cancelCalls = (): void => {
    waiting.abort();
    querying?.abort();
  };
  void options.detach.then(() => {
    detached = true;
    cancelCalls();
  });
  const bar = options.interactive
    ? new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: '{phase} |{bar}| {read}, {written} written, {rate}/s, ETA {eta_h}{retry}',
          barsize: BAR_CELLS,
          hideCursor: true,
          etaBuffer: 50,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  let started = false;
  let lastLine = 0;
  let lastText = '';
  let lastPhase = '';
  let final: { summary: MirrorProgress } | { error: unknown } | undefined;
  // Temporal not answering (restarting, or its machine away) is no end of the pass: the pass
  // goes on, or waits, there. The result is asked for again until the workflow has ended,
  // failed or not, or watching stops (the call cancelled on the way out is no end either).
  const awaitResult = async (): Promise<void> => {
    for (;;) {
      try {
        final = {
          summary: await handle.client.withAbortSignal(waiting.signal, () => handle.result()),
        };
        return;
      } catch (error) {
        if (waiting.signal.aborted) return;
        // Only a call Temporal did not answer is asked again (a result that cannot be
        // decoded, say, would fail the same way for good).
        if (!temporalAway(error) && !cutAtDeadline(error)) {
          final = { error };
          return;
        }
        temporalAwaySince ??= Date.now();
        await pause(1_000, { signal: waiting.signal });
        if (waiting.signal.aborted) return;
      }
    }
  };
  let temporalAwaySince: number | null = null;
  let saidAway = false;
  const temporalAnswered = (): void => {
    temporalAwaySince = null;
    if (!saidAway) return;
    saidAway = false;
    bar?.stop();
    started = false;
    process.stderr.write('Temporal answers again; watching the pass\n');
  };
  const result = awaitResult();
  // An activity failing and retried is invisible in the progress (the workflow only waits for
  // it): Temporal's description of the workflow says so, asked every few seconds.
  let retry: RetryView | null = null;
  // And whether its activities wait for a worker to take them (every slot taken, none polling).
  let workerWait: WorkerWait | null = null;
  let busy: BusyActivity | null = null;
  let describedAt = 0;
  let taskQueue: string | undefined;
  // The worker's check before the start passes for a worker that stopped a minute ago (the
  // server remembers pollers), and with none the queries wait unanswered: said once, not silence.
  let answeredAt = Date.now();
  let saidUnanswered = false;
  try {
    while (!final && !detached) {
      let answered: MirrorProgress | undefined;
      querying = new AbortController();
      const { signal } = querying;
      try {
        answered = await handle.client.withAbortSignal(signal, () =>
          handle.client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () =>
            handle.query(mirrorProgressQuery),
          ),
        );
        answeredAt = Date.now();
        temporalAnswered();
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) throw error;
        if (temporalAway(error)) temporalAwaySince ??= Date.now();
      }
      if (Date.now() - describedAt >= DESCRIBE_EVERY_MS) {
        describedAt = Date.now();
        // Under a deadline: the SDK retries a server that is not there for a long while.
        // Describing needs no worker, so no answer in time means Temporal is away.
        retry = await handle.client
          .withAbortSignal(signal, () =>
            handle.client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.describe()),
          )
          .then(
            async (description) => {
              taskQueue = description.taskQueue;
              temporalAnswered();
              workerWait = workerWaitOf(description);
              const converter = handle.client.options.loadedDataConverter;
              busy = await busyActivityOf(description, converter);
              return retryOf(description, converter);
            },
            (error: unknown) => {
              if (!(error instanceof WorkflowNotFoundError) && !signal.aborted) {
                temporalAwaySince ??= Date.now();
              }
              return retry;
            },
          );
      }
      // A pass waiting out a paused connection or a rate limit keeps the rate it read at; so
      // does one whose activity reads on without returning (its counts stand still meanwhile).
      const progress =
        answered &&
        asOfNow(answered, Date.now(), retry?.wait === true || workerWait !== null || busy !== null);
      if (
        !progress &&
        !saidAway &&
        temporalAwaySince !== null &&
        Date.now() - temporalAwaySince >= UNANSWERED_MS
      ) {
        saidAway = true;
        bar?.stop();
        started = false;
        process.stderr.write(
          `Temporal has not answered for ${UNANSWERED_MS / 1000} s: the pass is kept there and goes on once it is back; ` +
            `this command goes on watching until then, and Ctrl-C stops watching it\n`,
        );
      }
      if (
        !progress &&
        !saidUnanswered &&
        temporalAwaySince === null &&
        Date.now() - answeredAt >= UNANSWERED_MS
      ) {
        saidUnanswered = true;
        // The line goes below the bar, which starts again if an answer comes.
        bar?.stop();
        started = false;
        process.stderr.write(
          `no worker has answered this pass for ${UNANSWERED_MS / 1000} s: is one running on task queue '${taskQueue ?? '?'}'? ` +
            `('ebsync worker' or 'npm start' starts one); the pass waits in Temporal until one does, and Ctrl-C stops watching it\n`,
        );
      }
      if (progress) {
        const filled = Math.round(barFraction(progress) * BAR_SCALE);
        const retrying = retry
          ? retryLine(retry, progress.destination)
          : workerWait
            ? workerWaitLine(workerWait)
            : busy
              ? // Its records/s would fall on while the counts stand still: the slowdown, if
                // any, is said after it.
                [busyLine(busy), slowedLine(progress)].filter(Boolean).join('; ')
              : slowedLine(progress);
        const payload = {
          phase: progress.phase.padEnd(8),
          read: readText(readCounts(progress), true),
          written: progress.counts.written,
          rate: progress.ratePerSecond,
          eta_h: progress.etaMs === null ? '?' : duration(progress.etaMs),
          // The retry's reason quotes the service's or the destination's own words: one line.
          retry: retrying ? shownSafely(`; ${retrying}`) : '',
        };
        if (bar) {
          if (!started) bar.start(BAR_SCALE, filled, payload);
          else bar.update(filled, payload);
          started = true;
        } else {
          // At once when the phase changes (planning → reading), then every 5 s while it
          // moves; the same line again only every 30 s (a long wait).
          // The progress line says the slowdown itself: of the busy line's, only its own words.
          const after =
            retry || workerWait ? payload.retry : busy ? shownSafely(`; ${busyLine(busy)}`) : '';
          const line = `${report(progressLine, progress)}${after}`;
          const since = Date.now() - lastLine;
          if (progress.phase !== lastPhase || since > (line === lastText ? 30_000 : 5_000)) {
            process.stderr.write(`${line}\n`);
            lastLine = Date.now();
            lastText = line;
            lastPhase = progress.phase;
          }
        }
      }
      await pause(500, { until: [result, options.detach] });
    }
  } finally {
    bar?.stop();
    cancelCalls();
    await result;
  }
  if (!final) return 'detached';
  const outcome = final;
  if ('summary' in outcome) return { progress: outcome.summary, status: 'COMPLETED' };
  // No result: the pass was canceled (by 'sync --cancel' or the status page), terminated or
  // failed. Its progress says how far it got, and Temporal how it ended.
  let progress: MirrorProgress;
  try {
    progress = await handle.query(mirrorProgressQuery);
  } catch {
    throw outcome.error;
  }
  const status = await handle.describe().then(
    (description) => description.status.name,
    () => 'FAILED',
  );
  return { progress, status };
}

/** A pass's progress as printed: the destination's password masked, as the summary masks it. */
function shown(progress: MirrorProgress): MirrorProgress {
  return { ...progress, destination: maskCredentials(progress.destination) };
}

/** What `ebsync sync` takes besides the subjects. */
export interface SyncFlags {
  to?: string;
  full?: boolean;
  rewrite?: boolean;
  connection?: string;
  concurrency?: number;
  status?: boolean;
  cancel?: boolean;
  /** Delete the mirror's ended passes from Temporal (mirror-forget.ts). */
  forget?: boolean;
  json?: boolean;
  /** False with --no-check-destination: the database is not opened from here first. */
  checkDestination?: boolean;
}

/** `ebsync sync [what]`. */
export function syncCommand(what: string, flags: SyncFlags): Promise<void> {
  return runAction(async () => {
    const config = loadStartupConfig();
    const subjects = parseSubjects(what);
    if (flags.status && flags.cancel) {
      throw new UserError(
        '--status and --cancel do not go together: --status shows the pass, --cancel stops it',
        2,
      );
    }
    const others = (['status', 'cancel', 'full', 'rewrite', 'json'] as const).filter(
      (f) => flags[f] === true,
    );
    if (flags.forget && others.length > 0) {
      throw new UserError(
        `--forget deletes a mirror's ended passes and does not go with --${others[0]}`,
        2,
      );
    }
    // What the pass is to be: said with --status or --cancel, it was silently dropped.
    const starting = (['full', 'rewrite'] as const).find((f) => flags[f] === true);
    if (starting && (flags.status || flags.cancel)) {
      throw new UserError(
        `--${starting} starts a pass and does not go with ${flags.status ? '--status' : '--cancel'}`,
        2,
      );
    }
    const destination = normalizeDestination(flags.to ?? defaultDestination(config));
    const { client, close } = await connectClient(config);
    try {
      // Forgetting deletes history on the server: it needs no worker.
      const [, connectionId] = await inOrder([
        flags.forget ? undefined : requireWorker(client, config),
        pickConnection(client, config, flags.connection),
      ]);
      const workflowId = mirrorWorkflowId(connectionId, destinationKey(destination));
      if (flags.forget) {
        const line = await forgetMirror(client, config, { connectionId, destination, workflowId });
        process.stdout.write(`${line}\n`);
        return;
      }
      if (flags.status || flags.cancel) {
        const handle = client.workflow.getHandle<typeof mirrorWorkflow>(workflowId);
        let description;
        try {
          description = await handle.describe();
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) {
            throw new UserError(
              `no mirror of connection ${connectionId} into ${maskCredentials(destination)} yet: start one with '${syncAgainCommand(connectionId, maskCredentials(destination))}'`,
            );
          }
          throw error;
        }
        const status = description.status.name;
        if (flags.cancel) {
          if (status !== 'RUNNING') {
            process.stdout.write(
              `the mirror of connection ${connectionId} into ${maskCredentials(destination)} is not running (its last pass ${endedAs(status)})\n`,
            );
            return;
          }
          await handle.cancel();
          await handle.result().catch(() => undefined);
          process.stdout.write(
            `canceled the mirror of connection ${connectionId}; the interrupted pass deleted nothing\n`,
          );
          return;
        }
        // A pass that ended is shown as it ended: its elapsed time does not run on.
        const answered = await handle.query(mirrorProgressQuery);
        const retry =
          status === 'RUNNING'
            ? await retryOf(description, client.options.loadedDataConverter)
            : null;
        const workerWait = status === 'RUNNING' ? workerWaitOf(description) : null;
        const busy =
          status === 'RUNNING'
            ? await busyActivityOf(description, client.options.loadedDataConverter)
            : null;
        const progress =
          status === 'RUNNING'
            ? asOfNow(
                answered,
                Date.now(),
                retry?.wait === true || workerWait !== null || busy !== null,
              )
            : answered;
        const retrying =
          (retry ? `${shownSafely(retryLine(retry, destination))}\n` : '') +
          (workerWait ? `${shownSafely(workerWaitLine(workerWait))}\n` : '') +
          (busy ? `${busyLine(busy)}\n` : '');
        process.stdout.write(
          flags.json
            ? `${jsonText({
                status,
                ...shown(progress),
                ...(retry ? { retrying: retry } : {}),
                ...(workerWait ? { workerWait } : {}),
                ...(busy ? { busy } : {}),
              })}\n`
            : `${printable(`${endedAs(status)}\n${retrying}`)}${report(summaryText, progress, status)}`,
        );
        // The pass shown is the mirror's latest, whatever it mirrored: said when it is not of
        // the subjects asked; and one that ended without doing all it was asked exits as
        // 'ebsync sync' did (1 failed or canceled, 3 incomplete).
        const notIn = what === 'all' ? [] : subjects.filter((s) => !progress.subjects.includes(s));
        if (notIn.length > 0) {
          process.stderr.write(
            `ebsync: the pass shown is of ${progress.subjects.join(', ')}, not ${notIn.join(', ')}: ` +
              `a mirror (one per connection and destination) shows its latest pass, whatever it mirrored\n`,
          );
        }
        if (status !== 'RUNNING') process.exitCode = exitCodeOf(progress, status);
        return;
      }
      // A running mirror is attached to whatever its state (its progress says if it is
      // retrying); a new one is started only for a connection that exists, into a destination
      // that opens now. Nothing silent: a mirror that could never make progress is not started.
      let credentialsVersion: number | undefined;
      if (!(await isRunning(client, workflowId))) {
        // The pass asks the connection's workflow for its token: on a queue no worker polls
        // (another TEMPORAL_TASK_QUEUE started it), the pass would retry without end.
        await requireWorkerOf(client, config, connectionWorkflowId(connectionId));
        [, credentialsVersion] = await inOrder([
          flags.connection !== undefined ? requireConnection(client, connectionId) : undefined,
          refuseNeedsReauth(client, config, connectionId),
          flags.checkDestination !== false ? checkDestination(destination) : undefined,
          flags.checkDestination !== false
            ? refuseOtherWriter(config, connectionId, destination, 'nothing was started')
            : undefined,
        ]);
      }
      const { handle, attached } = await startOrAttach(client, config, {
        subjects,
        destination,
        full: flags.full === true,
        ...(flags.rewrite ? { rewrite: true } : {}),
        connectionId,
        ...(flags.concurrency ? { concurrency: flags.concurrency } : {}),
        ...(credentialsVersion !== undefined ? { credentialsVersion } : {}),
      });
      // Ctrl-C detaches from here on: taken before anything is said, since a SIGINT with no
      // listener ends the process at once (a Ctrl-C right after "attached …" did).
      let onSignal: () => void = () => undefined;
      const detach = new Promise<void>((resolveDetach) => (onSignal = resolveDetach));
      process.once('SIGINT', onSignal);
      process.stderr.write(
        attached
          ? `attached to the mirror already running (${handle.workflowId})\n`
          : `started the mirror (${handle.workflowId})\n`,
      );
      // One mirror runs per connection and destination: the running pass may not be the one
      // asked for (other subjects, or incremental where a full one was asked). Said, not hidden.
      const notAsked = attached
        ? await notTheAskedPass(handle, subjects, flags.full === true, flags.rewrite === true)
        : null;
      if (notAsked) process.stderr.write(`${notAsked}\n`);
      const outcome = await watchMirror(handle, {
        detach,
        interactive: process.stderr.isTTY === true,
        again: `ebsync sync${subjects.length === 1 ? ` ${what}` : ''}${flags.full ? ' --full' : ''}${mirrorFlags(flags, connectionId, destination)}`,
      });
      process.off('SIGINT', onSignal);
      if (outcome === 'detached') {
        // One command a line, as it is pasted (its words may carry quotes of their own).
        const again = mirrorFlags(flags, connectionId, destination);
        process.stderr.write(
          `detached: the sync goes on in Temporal (${handle.workflowId})\n` +
            `  see it:  ebsync sync --status${again}\n` +
            `  stop it: ebsync sync --cancel${again}\n`,
        );
        return;
      }
      // The same shape as `sync --status --json`: the workflow's status first.
      process.stdout.write(
        flags.json
          ? `${jsonText({ status: outcome.status, ...shown(outcome.progress) })}\n`
          : report(summaryText, outcome.progress, outcome.status),
      );
      process.exitCode = exitCodeOf(outcome.progress, outcome.status);
      // A pass that failed because the service no longer takes the connection's credentials:
      // the summary has the service's words, this line what to run.
      if (process.exitCode === 1) {
        const reauth = await reauthNeeded(client, connectionId);
        if (reauth) process.stderr.write(`ebsync: ${reauth.what}: ${reauth.run}\n`);
      }
      if (notAsked) {
        process.stderr.write(
          `ebsync: the pass asked for was not run, only the one that was running; run 'ebsync sync' again to run it\n`,
        );
        process.exitCode = Math.max(process.exitCode, 1);
      }
    } finally {
      await close();
    }
  });
}
