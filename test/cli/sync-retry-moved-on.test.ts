import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureMessage, retryOf } from '../../cli/pass-retry.js';
import { mirrorRun } from '../../cli/sync.js';
import { loadConfig } from '../../config/index.js';
import { connectClient } from '../../worker/temporal-client.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * A mirror page whose attempt failed (the service answering 503) and whose next attempt reads
 * again: Temporal keeps the activity's last failure and attempt number until it completes, so
 * `ebsync sync`'s progress line (and `ebsync status`) went on saying "retrying: …, attempt 2"
 * (or "waiting: …" after a 429) for as long as the retry read. A retry that has made progress
 * since it started is no longer shown; one waiting for its next attempt still is.
 */
let stack: CliStack;
let client: Client;
let closeClient: () => Promise<void>;
const CONNECTION = 'moved-on';
const { PENDING_ACTIVITY_STATE_SCHEDULED, PENDING_ACTIVITY_STATE_STARTED } =
  proto.temporal.api.enums.v1.PendingActivityState;

beforeAll(async () => {
  stack = await startCliStack({
    name: 'retry-moved-on',
    sandbox: { seed: { leads: 600, events: 0 } },
    connect: CONNECTION,
  });
  ({ client, close: closeClient } = await connectClient(
    loadConfig({ ...stack.env, PATH: process.env.PATH ?? '' }),
  ));
}, 180_000);

afterAll(async () => {
  await closeClient?.();
  await stack?.close();
});

type Pending = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

const msOf = (t: Pending['lastStartedTime']): number =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/**
 * Describes the workflow until one of its pending mirror pages matches and `also` holds of the
 * description, or the deadline.
 */
async function describeUntil(
  workflowId: string,
  match: (pending: Pending) => boolean,
  ms: number,
  also: (description: WorkflowExecutionDescription) => Promise<boolean> = () =>
    Promise.resolve(true),
): Promise<WorkflowExecutionDescription | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const description = await client.workflow.getHandle(workflowId).describe();
    const pages = (description.raw.pendingActivities ?? []).filter(
      (p) => p.activityType?.name === 'mirrorPage',
    );
    if (pages.some(match) && (await also(description))) return description;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

describe('a mirror page retried after the service failed', () => {
  it('is shown retrying while it waits for its next attempt, and not once that attempt reads', async () => {
    // Every request fails: the first page's attempt fails with nothing read.
    stack.sb.admin.setFaults({ errorRate: 1, errorStatuses: [503] });
    const { workflowId, input } = mirrorRun(CONNECTION, {
      subjects: ['leads'],
      destination: `sqlite:${stack.dir}/mirror.db`,
      full: true,
    });
    const handle = await client.workflow.start(mirrorWorkflow, {
      taskQueue: stack.env.TEMPORAL_TASK_QUEUE!,
      workflowId,
      args: [input],
    });
    try {
      const converter = client.options.loadedDataConverter;
      const waiting = await describeUntil(
        workflowId,
        (p) => (p.attempt ?? 1) >= 2 && p.state === PENDING_ACTIVITY_STATE_SCHEDULED,
        30_000,
      );
      expect(waiting, 'no mirror page waited for a retry').toBeDefined();
      expect(await retryOf(waiting!, converter)).toMatchObject({
        activity: 'mirrorPage',
        wait: false,
      });

      // The service answers again, slowly: the next attempt reads its pages for seconds.
      stack.sb.admin.setFaults({ errorRate: 0, latencyMs: 700 });
      // Temporal still describes the attempt reading with the failure and attempt 2 or more
      // (and keeps the earlier attempt's beat until this one beats): it reads, so no retry is
      // shown. Without the check of its beats, the retry was shown until the page completed.
      const reading = await describeUntil(
        workflowId,
        (p) =>
          (p.attempt ?? 1) >= 2 &&
          p.state === PENDING_ACTIVITY_STATE_STARTED &&
          msOf(p.lastHeartbeatTime) >= msOf(p.lastStartedTime),
        60_000,
        async (description) =>
          (await retryOf(description, converter)) === null &&
          // The attempt before failed on the 503 (its message sealed in the description).
          (
            await Promise.all(
              (description.raw.pendingActivities ?? []).map((p) =>
                p.lastFailure ? failureMessage(p.lastFailure, converter) : Promise.resolve(''),
              ),
            )
          ).some((message) => message.includes('503')),
      );
      expect(reading, 'a retried mirror page reading again was still shown retrying').toBeDefined();
    } finally {
      stack.sb.admin.clearFaults();
      await handle.terminate('test over').catch(() => undefined);
    }
  }, 120_000);
});
