import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { Config } from '../config/index.js';
import { PayloadDecryptionError } from '../worker/codec.js';
import { dataConverter } from '../worker/data-converter.js';
import { UserError } from './errors.js';

/** Running workflows whose first payload is tried: one sealed with another key is enough. */
const SAMPLE = 3;

/**
 * Refuses, in one line, a Temporal server whose running ebsync workflows (on this task queue)
 * this process's keys cannot open. `ebsync dev` makes a key per data directory, so a second
 * `npm start` from another directory on a server the first one started would otherwise run a
 * worker on the same task queue: it takes the other's tasks, fails every one of them
 * (PayloadDecryptionError, every few seconds), and its own demo cannot connect. Checked before
 * any worker starts. Only a sure decryption failure refuses; an unreadable history does not.
 */
export async function requireOwnKeys(client: Client, config: Config): Promise<void> {
  const queue = config.temporal.taskQueue.replace(/'/g, "\\'");
  let tried = 0;
  for await (const execution of client.workflow.list({
    query: `ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
    pageSize: SAMPLE,
  })) {
    if (tried >= SAMPLE) break;
    tried += 1;
    if (await sealedWithOtherKeys(client, config, execution.workflowId, execution.runId)) {
      throw new UserError(
        `the Temporal server at ${config.temporal.address} already runs ebsync workflows on task queue ` +
          `'${config.temporal.taskQueue}' that this data directory's keys cannot open ` +
          `('${execution.workflowId}': another ebsync, with another EBSYNC_DATA_DIR, uses that server); ` +
          'stop that one, run this one from the same data directory, or give it a server of its own ' +
          '(npm start -- --port 7243)',
      );
    }
  }
}

/**
 * Whether a workflow's input was sealed with keys this process lacks (a sure decryption
 * failure; a history that cannot be read, or has no input, is not taken for one).
 */
export async function sealedWithOtherKeys(
  client: Client,
  config: Config,
  workflowId: string,
  runId?: string,
): Promise<boolean> {
  const history = await client.workflowService
    .getWorkflowExecutionHistory({
      namespace: config.temporal.namespace,
      execution: { workflowId, ...(runId ? { runId } : {}) },
      maximumPageSize: 1,
    })
    .catch(() => undefined);
  const started = history?.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  let payloads = (started?.input?.payloads ?? []) as Payload[];
  if (payloads.length === 0) return false;
  try {
    for (const codec of [...(dataConverter(config).payloadCodecs ?? [])].reverse()) {
      payloads = await codec.decode(payloads);
    }
    return false;
  } catch (error) {
    return error instanceof PayloadDecryptionError;
  }
}
