import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { connectionWorkflow } from '../workflows/connection.js';
import {
  type ConnectionStatus,
  connectionWorkflowId,
  statusQuery,
} from '../workflows/connection-types.js';
import type { Config } from '../config/index.js';
import { UserError } from './errors.js';
import { keysSource } from '../worker/data-converter.js';
import {
  keysApart,
  livePollers,
  POLLER_FRESH_MS,
  workerIdentity,
  workerName,
} from '../worker/worker-identity.js';
import { sealedWithOtherKeys } from '../worker/workflow-keys.js';
import { messageOf, temporalAway, withinDeadline } from './workflow-deadline.js';
import { withRefreshRetry } from './refresh-retry.js';

/**
 * How long a connection's workflow may take to answer its status query, wherever it is only
 * read (`connections`, `connections <id>`, `status` and the status page): a worker answers in
 * milliseconds, so waiting longer only delays the line that none runs it.
 */
export const STATUS_DEADLINE_MS = 10_000;

/**
 * A running connection whose status could not be had: no worker answered within the deadline,
 * or the answer was an error (`error`), such as a workflow sealed with other encryption keys
 * than this deployment's (its data directory made again). The others are listed all the same.
 */
export interface SilentConnection {
  connectionId: string;
  workflowId: string;
  /** Why its answer could not be read; absent when no worker answered in time. */
  error?: string;
  /**
   * No worker had polled its task queue lately, so it was not asked: a query there waits out
   * the whole deadline for the answer no worker gives.
   */
  unpolled?: true;
}

/** What the running connections answered, and which did not answer. */
export interface ConnectionAnswers {
  statuses: ConnectionStatus[];
  silent: SilentConnection[];
}

/** No worker answered within the deadline: it may once one runs. */
class NoAnswer extends Error {
  override readonly name = 'NoAnswer';
  readonly retryable = true;
}

/** No worker polled the task queue lately: the workflow was not asked. */
class NoPoller extends Error {
  override readonly name = 'NoPoller';
  readonly retryable = true;
}

/** The running connection workflows of this deployment (its task queue): Temporal's list, no worker needed. */
async function* runningConnectionWorkflows(client: Client, taskQueue: string) {
  const queue = taskQueue.replace(/'/g, "\\'");
  for await (const execution of client.workflow.list({
    query: `WorkflowType = '${connectionWorkflow.name}' AND ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
  })) {
    yield { workflowId: execution.workflowId, runId: execution.runId };
  }
}

/**
 * Runs found sealed with other keys, or not: a run's input never changes, so the status page,
 * which asks every 2 s, fetches each unanswering run's history once, not on every refresh (a
 * history that could not be read is asked again next time).
 */
const sealedVerdicts = new Map<string, boolean>();
const SEALED_VERDICTS_MAX = 1_000;

async function sealedElsewhere(
  client: Client,
  config: Config,
  workflowId: string,
  runId: string,
): Promise<boolean> {
  const known = sealedVerdicts.get(runId);
  if (known !== undefined) return known;
  const sealed = await sealedWithOtherKeys(client, config, workflowId, runId);
  if (sealed === undefined) return false;
  if (sealedVerdicts.size >= SEALED_VERDICTS_MAX) sealedVerdicts.clear();
  sealedVerdicts.set(runId, sealed);
  return sealed;
}

const connectionIdOf = (workflowId: string): string => workflowId.replace(/^connection-/, '');

/** The ids of this deployment's running connections, without asking any of them. */
export async function runningConnectionIds(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const { workflowId } of runningConnectionWorkflows(client, taskQueue)) {
    ids.push(connectionIdOf(workflowId));
  }
  return ids;
}

/** The identities of the workers polling this deployment's task queue lately. */
export const queuePollers = (client: Client, config: Config): Promise<string[]> =>
  livePollers(client, config.temporal.namespace, config.temporal.taskQueue);

/**
 * The running connection workflows of this deployment (its task queue), each asked its status.
 * `pollers` (queuePollers) is read once per command: a caller that needs them too passes its own.
 */
export async function askConnections(
  client: Client,
  config: Config,
  deadlineMs = STATUS_DEADLINE_MS,
  pollers: Promise<string[]> = queuePollers(client, config),
): Promise<ConnectionAnswers> {
  const taskQueue = config.temporal.taskQueue;
  const asked: Promise<ConnectionStatus | SilentConnection | undefined>[] = [];
  // Asked once, by the first connection sealed with other keys (most listings have none).
  let keys: Promise<KeysAbout> | undefined;
  // Asked once, beside the listing: with no worker polling the queue lately, each query would
  // only wait out its deadline (the status page and `ebsync status` took 10 s with the worker
  // stopped). Where the queue cannot be described, the queries tell.
  const polled = pollers.then(
    (identities) => identities.length > 0,
    () => true,
  );
  // Asked all at once: the status page lists every connection on each load.
  for await (const { workflowId, runId } of runningConnectionWorkflows(client, taskQueue)) {
    asked.push(
      polled
        .then((alive) => {
          if (!alive) throw new NoPoller(workflowId);
          return withinDeadline(
            client,
            deadlineMs,
            () => client.workflow.getHandle(workflowId).query(statusQuery),
            () => new NoAnswer(workflowId),
          );
        })
        .then((status) => withRefreshRetry(client, status))
        .catch(async (error: unknown) => {
          if (error instanceof WorkflowNotFoundError) return undefined;
          // Temporal itself gone: the whole listing fails, as its list call would have.
          if (temporalAway(error)) throw error;
          const connectionId = connectionIdOf(workflowId);
          // A workflow sealed with other keys fails every task of the worker that takes it, so
          // its query is refused or waits out the deadline: that, not the worker, is the cause.
          if (await sealedElsewhere(client, config, workflowId, runId)) {
            return {
              connectionId,
              workflowId,
              error: otherKeysLine(
                await (keys ??= keysAbout(client, config, pollers)),
                config,
                workflowId,
              ),
            };
          }
          if (error instanceof NoAnswer) return { connectionId, workflowId };
          if (error instanceof NoPoller)
            return { connectionId, workflowId, unpolled: true as const };
          return { connectionId, workflowId, error: messageOf(error) };
        }),
    );
  }
  const statuses: ConnectionStatus[] = [];
  const silent: SilentConnection[] = [];
  for (const answer of await Promise.all(asked)) {
    if (!answer) continue;
    if ('state' in answer) statuses.push(answer);
    else silent.push(answer);
  }
  statuses.sort((a, b) => a.connectionId.localeCompare(b.connectionId));
  silent.sort((a, b) => a.connectionId.localeCompare(b.connectionId));
  return { statuses, silent };
}

/** Where this command's keys came from, and a live worker holding other keys, if one polls. */
interface KeysAbout {
  from: string;
  /** `ebsync-worker 123@host`: a worker on the task queue that cannot open this command's payloads. */
  otherWorker?: string;
}

/** Read once per command: the key file and the task queue's pollers do not change meanwhile. */
async function keysAbout(
  client: Client,
  config: Config,
  pollers: Promise<string[]> = queuePollers(client, config),
): Promise<KeysAbout> {
  const ring = keysSource(config);
  const ours = workerIdentity(ring.keys);
  const identities = await pollers.catch(() => [] as string[]);
  const apart = identities.find((identity) => keysApart(ours, identity) !== undefined);
  return { from: ring.from, ...(apart === undefined ? {} : { otherWorker: workerName(apart) }) };
}

/**
 * A connection workflow this command's keys cannot open: why, and the ways out. When workers
 * polling its task queue hold other keys than this command's, the command is the odd one out
 * (most often another EBSYNC_DATA_DIR, whose key file it just made): the workflow may be
 * running fine, so the line says whose keys to use, never to end it.
 */
function otherKeysLine(keys: KeysAbout, config: Config, workflowId: string): string {
  if (keys.otherWorker !== undefined) {
    return (
      `it was sealed with encryption keys this command lacks (its keys: ${keys.from}), and ` +
      `${keys.otherWorker}, polling task queue '${config.temporal.taskQueue}', holds other keys than ` +
      `this command: run the command with the workers' EBSYNC_DATA_DIR (in development) or ` +
      `EBSYNC_ENCRYPTION_KEYS`
    );
  }
  return (
    `it was sealed with encryption keys this deployment lacks (this command's: ${keys.from}; ` +
    `EBSYNC_ENCRYPTION_KEYS, or the encryption-keys file in EBSYNC_DATA_DIR: a data directory ` +
    `made again makes new ones), so no worker of it can run it; give the workers the keys ` +
    `that sealed it, or, those keys gone, end it: temporal workflow terminate --workflow-id ` +
    `'${workflowId}'`
  );
}

/**
 * Why connection `id` cannot be run by this deployment, in a line, when its workflow was sealed
 * with other encryption keys; else null (also when that cannot be told now). One page of its
 * history: cheap enough to ask before anything is started for the connection.
 */
export async function sealedConnectionLine(
  client: Client,
  config: Config,
  id: string,
): Promise<string | null> {
  const workflowId = connectionWorkflowId(id);
  if ((await sealedWithOtherKeys(client, config, workflowId)) !== true) return null;
  const error = otherKeysLine(await keysAbout(client, config), config, workflowId);
  return `connection ${id}: ${silentReason({ connectionId: id, workflowId, error }, config.temporal.taskQueue, STATUS_DEADLINE_MS)}`;
}

/** Why one connection's status could not be had, in a line. */
export function silentReason(silent: SilentConnection, taskQueue: string, ms: number): string {
  return silent.error === undefined
    ? silentLine([silent], taskQueue, ms)
    : `its status could not be read from its workflow '${silent.workflowId}': ${silent.error}`;
}

/** One line per connection whose status could not be had (those no worker answered share one). */
export function silentLines(
  silent: readonly SilentConnection[],
  taskQueue: string,
  ms: number,
): string[] {
  const unasked = silent.filter((s) => s.error === undefined && s.unpolled === true);
  const unanswered = silent.filter((s) => s.error === undefined && s.unpolled !== true);
  return [
    ...(unasked.length > 0 ? [silentLine(unasked, taskQueue, ms)] : []),
    ...(unanswered.length > 0 ? [silentLine(unanswered, taskQueue, ms)] : []),
    ...silent
      .filter((s) => s.error !== undefined)
      .map((s) => `connection ${s.connectionId}: ${silentReason(s, taskQueue, ms)}`),
  ];
}

/**
 * The line for connections no worker answered, or that were not asked since no worker polled
 * their queue lately (all of `silent` alike): which workflows, and what to start.
 */
export function silentLine(
  silent: readonly SilentConnection[],
  taskQueue: string,
  ms: number,
): string {
  const ids = silent.map((s) => `'${s.workflowId}'`).join(', ');
  const one = silent.length === 1;
  const which = one ? `the connection's workflow ${ids}` : `the connections' workflows ${ids}`;
  const start = "start one ('ebsync worker' or 'npm start') and try again";
  if (silent.every((s) => s.unpolled === true)) {
    return `${which} ${one ? 'was' : 'were'} not asked: no worker has polled task queue '${taskQueue}' in the last ${POLLER_FRESH_MS / 60_000} minutes; ${start}`;
  }
  return `${which} got no answer within ${ms / 1000} s: no worker runs ${one ? 'it' : 'them'} on task queue '${taskQueue}'; ${start}`;
}

/** Connections of this deployment: the running connection workflows on its task queue. */
export async function listConnections(client: Client, config: Config): Promise<ConnectionStatus[]> {
  const { statuses, silent } = await askConnections(client, config);
  if (silent.length > 0) {
    throw new UserError(silentLines(silent, config.temporal.taskQueue, STATUS_DEADLINE_MS));
  }
  return statuses;
}
