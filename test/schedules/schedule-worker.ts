import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, ScheduleExecutionResult } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { loadConfig, type Config } from '../../config/index.js';
import type { TestSandbox } from '../helpers/sandbox.js';
import { sandboxMirrorDeps } from '../fixtures/sandbox-mirror-deps.js';
import type {
  ScheduledMirrorResult,
  scheduledMirrorWorkflow,
} from '../../workflows/scheduled-mirror.js';

/** The settings the CLI would load with this data directory, address and task queue. */
export function scheduleConfig(dir: string, address: string, taskQueue: string): Config {
  return loadConfig({
    EBSYNC_DATA_DIR: dir,
    TEMPORAL_ADDRESS: address,
    TEMPORAL_TASK_QUEUE: taskQueue,
  });
}

/** A worker that runs the mirror (and the schedules' actions) against the test's sandbox. */
export async function mirrorWorker(o: {
  connection: NativeConnection;
  taskQueue: string;
  bundlePath: string;
  ts: TestSandbox;
  dir: string;
}): Promise<{ worker: Worker; close(): Promise<void> }> {
  const deps = sandboxMirrorDeps({
    baseUrl: o.ts.sb.baseUrl,
    apiKey: o.ts.sb.apiKey,
    ca: readFileSync(o.ts.sb.caFile ?? ''),
    ledger: `sqlite:${join(o.dir, 'store.db')}`,
    reachLimit: 10_000,
    per: 100,
  });
  const worker = await Worker.create({
    connection: o.connection,
    taskQueue: o.taskQueue,
    workflowBundle: { codePath: o.bundlePath },
    activities: createMirrorActivities(deps),
  });
  return { worker, close: () => deps.close() };
}

/** Polls `check` until it returns something, or fails after `timeoutMs` saying what it waited for. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The results of these actions of a schedule (each one waited for). */
export async function actionResults(
  client: Client,
  actions: readonly ScheduleExecutionResult[],
): Promise<ScheduledMirrorResult[]> {
  return Promise.all(
    actions.map((a) =>
      client.workflow
        .getHandle<typeof scheduledMirrorWorkflow>(a.action.workflow.workflowId)
        .result(),
    ),
  );
}
