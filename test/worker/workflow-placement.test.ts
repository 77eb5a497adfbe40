import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  sdkDebugSwitch,
  WORKFLOW_ACTIVATION_LIMIT,
  workflowPlacement,
} from '../../worker/workflow-placement.js';
import { quickWorkflow, spinWorkflow } from '../fixtures/spin-workflow.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * Where a worker runs workflow code (EBSYNC_WORKFLOW_THREAD). By default on its main thread,
 * through the SDK's in-process VM, which the SDK offers only with `debugMode`; `debugMode`
 * also lifts the limit on an activation's CPU, so the worker sets that limit again. Checked on
 * the real dev server: a workflow that never yields fails its task after 5 s (the SDK's words:
 * "Script execution timed out"), and the worker goes on serving other workflows.
 */
let t: TemporalHarness;
let code: string;

beforeAll(async () => {
  t = await connectTemporal();
  ({ code } = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('../fixtures/spin-workflow.ts', import.meta.url)),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  }));
}, 60_000);

afterAll(async () => {
  await t.close();
});

describe('workflowPlacement', () => {
  it('puts workflows on the main thread with the activation limit, unless asked for the thread', () => {
    expect(workflowPlacement(false, false)).toEqual({
      debugMode: true,
      isolateExecutionTimeout: WORKFLOW_ACTIVATION_LIMIT,
    });
    expect(workflowPlacement(true, false)).toEqual({});
    expect(workflowPlacement(true, true)).toEqual({});
    // The SDK's debugger switch keeps its unlimited time.
    expect(workflowPlacement(false, true)).toEqual({ debugMode: true });
  });

  it('reads TEMPORAL_DEBUG as the SDK does', () => {
    for (const on of ['1', 't', 'true', 'TRUE']) expect(sdkDebugSwitch(on)).toBe(true);
    for (const off of [undefined, '', '0', 'false', 'yes']) expect(sdkDebugSwitch(off)).toBe(false);
  });
});

/**
 * Node worker threads made in this process since the module loaded. The SDK makes its
 * workflow thread with `new (require('node:worker_threads').Worker)(…)`, reading the class at
 * the call, so a counting subclass put there sees it. (Thread names in /proc served on Node 24,
 * which names each 'WorkerThread', but not on Node 22, which names every thread 'node'.)
 */
const workerThreads = createRequire(import.meta.url)('node:worker_threads') as {
  Worker: typeof Worker;
};
let workersMade = 0;
const OriginalWorker = workerThreads.Worker;
workerThreads.Worker = class CountedWorker extends OriginalWorker {
  constructor(...args: ConstructorParameters<typeof Worker>) {
    super(...args);
    workersMade += 1;
  }
};
afterAll(() => {
  workerThreads.Worker = OriginalWorker;
});
const nodeThreads = (): number => workersMade;

/** Runs a worker with this placement; says how many Node threads it added to this process. */
async function withPlacedWorker<T>(
  onThread: boolean,
  fn: (taskQueue: string, activationLimitMs: number) => Promise<T>,
): Promise<{ result: T; threadsAdded: number }> {
  const before = nodeThreads();
  const taskQueue = t.taskQueue();
  let threadsAdded = 0;
  const result = await t.withWorker(
    {
      taskQueue,
      activities: {},
      workflowBundle: { code },
      ...workflowPlacement(onThread, false),
    },
    async (worker) => {
      threadsAdded = nodeThreads() - before;
      return fn(taskQueue, worker.options.isolateExecutionTimeoutMs);
    },
  );
  return { result, threadsAdded };
}

describe('a worker with workflows on its main thread', () => {
  it('fails the task of a workflow that never yields after 5 s, and goes on serving others', async () => {
    const { result, threadsAdded } = await withPlacedWorker(false, async (taskQueue, limit) => {
      // Without the limit the workflow below would hold this process's main thread for good.
      if (limit !== 5_000) throw new Error(`the worker's activation limit is ${limit} ms, not 5 s`);
      // Timed from before the start: the activation spins on this very thread, so the start's
      // answer may be read only once the limit has stopped it.
      const started = Date.now();
      const stuck = await t.client.workflow.start(spinWorkflow, {
        taskQueue,
        workflowId: `spin-${taskQueue}`,
      });
      let failure: string | undefined;
      while (failure === undefined && Date.now() - started < 30_000) {
        const history = await stuck.fetchHistory();
        const failed = history.events?.find((e) => e.workflowTaskFailedEventAttributes);
        failure = failed?.workflowTaskFailedEventAttributes?.failure?.message ?? undefined;
        if (failure === undefined) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const waited = Date.now() - started;
      await stuck.terminate('test over');
      const answer = await t.client.workflow.execute(quickWorkflow, {
        taskQueue,
        workflowId: `quick-${taskQueue}`,
      });
      return { failure, waited, answer };
    });
    expect(result.failure).toMatch(/timed out after 5000ms/);
    // The limit held: the activation was stopped after about 5 s, not left to spin.
    expect(result.waited).toBeGreaterThanOrEqual(4_000);
    expect(result.answer).toBe('done');
    // No thread of its own: the workflows ran on this process's main thread.
    expect(threadsAdded).toBe(0);
  }, 60_000);

  it('with EBSYNC_WORKFLOW_THREAD, runs them on a Node thread of their own', async () => {
    const { result, threadsAdded } = await withPlacedWorker(true, (taskQueue) =>
      t.client.workflow.execute(quickWorkflow, { taskQueue, workflowId: `quick-${taskQueue}` }),
    );
    expect(result).toBe('done');
    expect(threadsAdded).toBe(1);
  }, 60_000);
});
