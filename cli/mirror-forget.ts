import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { maskCredentials } from '../config/database-locations.js';
import { UserError } from './errors.js';

/** How long the command waits for Temporal's list to drop the deleted runs (it does so async). */
const GONE_WITHIN_MS = 15_000;

export interface ForgetTarget {
  connectionId: string;
  /** As given with --to (its password masked when said). */
  destination: string;
  /** The mirror's workflow id (mirrorWorkflowId). */
  workflowId: string;
}

/** Run ids of the mirror's workflow that Temporal lists, and whether one is running. */
async function runsOf(client: Client, workflowId: string) {
  const runs: { runId: string; running: boolean }[] = [];
  // The id is `mirror-<connection name>-<hex>`: no quote can be in it (isConnectionName).
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs.push({ runId: run.runId, running: run.status.name === 'RUNNING' });
  }
  return runs;
}

/**
 * `ebsync sync --forget`: deletes from Temporal every ended pass of one mirror (a connection
 * into a destination), so that `ebsync status` stops reporting one no longer wanted (a failed
 * pass into a mistyped destination stays a problem until a pass into it completes). A running
 * pass is never deleted: the command says to cancel it first. What the passes wrote stays, in
 * the destination and in the ledger; a later pass into it writes only what changed. Returns
 * the line to print.
 */
export async function forgetMirror(
  client: Client,
  config: Config,
  target: ForgetTarget,
): Promise<string> {
  const into = `connection ${target.connectionId} into ${maskCredentials(target.destination)}`;
  const runs = await runsOf(client, target.workflowId);
  if (runs.length === 0) return `no mirror of ${into}: nothing to forget`;
  if (runs.some((r) => r.running)) {
    throw new UserError(
      `the mirror of ${into} is running: 'ebsync sync --cancel' (with the same --connection and --to) stops it, then --forget forgets it; nothing was deleted`,
    );
  }
  for (const run of runs) {
    await client.workflowService.deleteWorkflowExecution({
      namespace: config.temporal.namespace,
      workflowExecution: { workflowId: target.workflowId, runId: run.runId },
    });
  }
  // Deletion is asynchronous on the server: `ebsync status` right after should not show it.
  const deadline = Date.now() + GONE_WITHIN_MS;
  while ((await runsOf(client, target.workflowId)).length > 0) {
    if (Date.now() > deadline) {
      throw new UserError(
        `asked Temporal to delete ${runs.length} run(s) of the mirror of ${into}, but it still lists some after ${GONE_WITHIN_MS / 1000} s; run --forget again later`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const passes = runs.length === 1 ? '1 run' : `${runs.length} runs`;
  return (
    `forgot the mirror of ${into}: ${passes} deleted from Temporal, so 'ebsync status' no longer shows it; ` +
    `what it wrote stays in the destination (a later pass into it writes only what changed)`
  );
}
