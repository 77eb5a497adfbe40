import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { Config } from '../config/index.js';
import { PayloadDecryptionError } from './codec.js';
import { dataConverter } from './data-converter.js';

/** Running workflows whose first payload is tried: one sealed with another key is enough. */
const SAMPLE = 3;

/**
 * Whether a workflow's input was sealed with keys this process lacks (a sure decryption
 * failure; a workflow without input is not). Undefined when its history could not be read now.
 */
export async function sealedWithOtherKeys(
  client: Client,
  config: Config,
  workflowId: string,
  runId?: string,
): Promise<boolean | undefined> {
  const history = await client.workflowService
    .getWorkflowExecutionHistory({
      namespace: config.temporal.namespace,
      execution: { workflowId, ...(runId ? { runId } : {}) },
      maximumPageSize: 1,
    })
    .catch(() => undefined);
  if (history === undefined) return undefined;
  const started = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
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

/**
 * The id of a running workflow on `taskQueue` that this process's keys cannot open, among the
 * first few listed; undefined when those open (or none runs). A worker of other keys on that
 * queue would take its tasks and fail every one of them.
 */
export async function runningSealedElsewhere(
  client: Client,
  config: Config,
  taskQueue = config.temporal.taskQueue,
): Promise<string | undefined> {
  const queue = taskQueue.replace(/'/g, "\\'");
  let tried = 0;
  for await (const execution of client.workflow.list({
    query: `ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
    pageSize: SAMPLE,
  })) {
    if (tried >= SAMPLE) break;
    tried += 1;
    if (
      (await sealedWithOtherKeys(client, config, execution.workflowId, execution.runId)) === true
    ) {
      return execution.workflowId;
    }
  }
  return undefined;
}
