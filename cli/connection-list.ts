import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { connectionWorkflow } from '../workflows/connection.js';
import { type ConnectionStatus, statusQuery } from '../workflows/connection-types.js';
import { UserError } from './errors.js';
import { withinDeadline } from './workflow-deadline.js';

/**
 * How long a connection's workflow may take to answer its status query, wherever it is only
 * read (`connections`, `connections <id>`, `status` and the status page): a worker answers in
 * milliseconds, so waiting longer only delays the line that none runs it.
 */
export const STATUS_DEADLINE_MS = 10_000;

/** A running connection whose workflow no worker answered within the deadline. */
export interface SilentConnection {
  connectionId: string;
  workflowId: string;
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

/** The running connection workflows of this deployment (its task queue): Temporal's list, no worker needed. */
async function* runningConnectionWorkflows(client: Client, taskQueue: string) {
  const queue = taskQueue.replace(/'/g, "\\'");
  for await (const execution of client.workflow.list({
    query: `WorkflowType = '${connectionWorkflow.name}' AND ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
  })) {
    yield execution.workflowId;
  }
}

const connectionIdOf = (workflowId: string): string => workflowId.replace(/^connection-/, '');

/** The ids of this deployment's running connections, without asking any of them. */
export async function runningConnectionIds(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const workflowId of runningConnectionWorkflows(client, taskQueue)) {
    ids.push(connectionIdOf(workflowId));
  }
  return ids;
}

/** The running connection workflows of this deployment (its task queue), each asked its status. */
export async function askConnections(
  client: Client,
  taskQueue: string,
  deadlineMs = STATUS_DEADLINE_MS,
): Promise<ConnectionAnswers> {
  const asked: Promise<ConnectionStatus | SilentConnection | undefined>[] = [];
  // Asked all at once: the status page lists every connection on each load.
  for await (const workflowId of runningConnectionWorkflows(client, taskQueue)) {
    asked.push(
      withinDeadline(
        client,
        deadlineMs,
        () => client.workflow.getHandle(workflowId).query(statusQuery),
        () => new NoAnswer(workflowId),
      ).catch((error: unknown) => {
        if (error instanceof WorkflowNotFoundError) return undefined;
        if (error instanceof NoAnswer)
          return { connectionId: connectionIdOf(workflowId), workflowId };
        throw error;
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

/** The line for connections no worker answered: which workflows, and what to start. */
export function silentLine(
  silent: readonly SilentConnection[],
  taskQueue: string,
  ms: number,
): string {
  const ids = silent.map((s) => `'${s.workflowId}'`).join(', ');
  const which =
    silent.length === 1 ? `the connection's workflow ${ids}` : `the connections' workflows ${ids}`;
  return `${which} got no answer within ${ms / 1000} s: no worker runs ${silent.length === 1 ? 'it' : 'them'} on task queue '${taskQueue}'; start one ('ebsync worker' or 'npm start') and try again`;
}

/** Connections of this deployment: the running connection workflows on its task queue. */
export async function listConnections(
  client: Client,
  taskQueue: string,
): Promise<ConnectionStatus[]> {
  const { statuses, silent } = await askConnections(client, taskQueue);
  if (silent.length > 0) throw new UserError(silentLine(silent, taskQueue, STATUS_DEADLINE_MS));
  return statuses;
}
