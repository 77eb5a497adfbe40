import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { connectionWorkflow } from '../workflows/connection.js';
import { type ConnectionStatus, statusQuery } from '../workflows/connection-types.js';

/** Connections of this deployment: the running connection workflows on its task queue. */
export async function listConnections(
  client: Client,
  taskQueue: string,
): Promise<ConnectionStatus[]> {
  const queue = taskQueue.replace(/'/g, "\\'");
  const asked: Promise<ConnectionStatus | undefined>[] = [];
  // Asked all at once: the status page lists every connection on each load.
  for await (const execution of client.workflow.list({
    query: `WorkflowType = '${connectionWorkflow.name}' AND ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
  })) {
    asked.push(
      client.workflow
        .getHandle(execution.workflowId)
        .query(statusQuery)
        .catch((error: unknown) => {
          if (error instanceof WorkflowNotFoundError) return undefined;
          throw error;
        }),
    );
  }
  const out = (await Promise.all(asked)).filter((s): s is ConnectionStatus => s !== undefined);
  return out.sort((a, b) => a.connectionId.localeCompare(b.connectionId));
}
