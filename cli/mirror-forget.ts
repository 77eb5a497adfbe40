import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { maskCredentials } from '../config/database-locations.js';
import { UserError } from './errors.js';
import { describeWorkflow } from './workflow-describe.js';

/** How long the command waits for Temporal to delete the runs (it does so asynchronously). */
const GONE_WITHIN_MS = 30_000;

export interface ForgetTarget {
  connectionId: string;
  /** As given with --to (its password masked when said). */
  destination: string;
  /** The mirror's workflow id (mirrorWorkflowId). */
  workflowId: string;
}

/** Run ids of the mirror's workflow that Temporal's visibility lists (it may lag behind). */
async function listedRuns(client: Client, workflowId: string): Promise<string[]> {
  const runs: string[] = [];
  // The id is `mirror-<connection name>-<hex>`: no quote can be in it (isConnectionName).
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs.push(run.runId);
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
  // Whether a pass runs is asked of the workflow itself: the list may not show one just
  // started. Only the newest run of a workflow id can be open.
  const latest = await describeWorkflow(client, target.workflowId);
  if (latest === null) return `no mirror of ${into}: nothing to forget`;
  if (latest.status.name === 'RUNNING') {
    throw new UserError(
      `the mirror of ${into} is running: 'ebsync sync --cancel' (with the same --connection and --to) stops it, then --forget forgets it; nothing was deleted`,
    );
  }
  const runs = [...new Set([latest.runId, ...(await listedRuns(client, target.workflowId))])];
  for (const runId of runs) {
    await client.workflowService.deleteWorkflowExecution({
      namespace: config.temporal.namespace,
      workflowExecution: { workflowId: target.workflowId, runId },
    });
  }
  // Deletion is asynchronous on the server: it is done once the workflow is no longer found;
  // the list (what `ebsync status` reads) follows a moment later, longer on a busy server.
  const deadline = Date.now() + GONE_WITHIN_MS;
  while ((await describeWorkflow(client, target.workflowId)) !== null) {
    if (Date.now() > deadline) {
      throw new UserError(
        `asked Temporal to delete ${runs.length} run(s) of the mirror of ${into}, but it still has them after ${GONE_WITHIN_MS / 1000} s; run --forget again later`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const lagging = (await listedRuns(client, target.workflowId)).length > 0;
  const passes = runs.length === 1 ? '1 run' : `${runs.length} runs`;
  const shows = lagging
    ? `'ebsync status' stops showing it once Temporal's list catches up (seconds)`
    : `'ebsync status' no longer shows it`;
  return (
    `forgot the mirror of ${into}: ${passes} deleted from Temporal, so ${shows}; ` +
    `what it wrote stays in the destination (a later pass into it writes only what changed)`
  );
}
